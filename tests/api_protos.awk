# tests/api_protos.awk: the function prototypes of the ```c blocks of API.md, one a line. make
# test-api compiles them as redeclarations after gradient.h, so that any signature that differs
# from the binding contract is a compile error.
/^```c/ { inc = 1; next }
/^```/  { inc = 0; next }
!inc { next }
{
    line = $0
    if (incomment) { i = index(line, "*/"); if (!i) next; line = substr(line, i + 2); incomment = 0 }
    while ((i = index(line, "/*")) > 0) {               # comments, one at a time
        rest = substr(line, i + 2)
        j = index(rest, "*/")
        if (!j) { line = substr(line, 1, i - 1); incomment = 1; break }
        line = substr(line, 1, i - 1) " " substr(rest, j + 2)
    }
    stmt = stmt " " line
    while ((i = index(stmt, ";")) > 0) {
        s = substr(stmt, 1, i); stmt = substr(stmt, i + 1)
        gsub(/[ \t]+/, " ", s); sub(/^ /, "", s)
        if (s ~ /^(typedef|struct|enum|#)/ || s ~ /^[{}]/ || s !~ /\(/ || s ~ /\(\*/) continue
        print s
    }
}
