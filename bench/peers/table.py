"""bench/peers/table.py: the table of make bench-peers (bench/peers/run.sh). Reads bench --peers's output
(rows "| name | gradient.h ms | hand C ms | ratio | notes") and the peers' rows
("peer-row <TAB> name <TAB> ms <TAB> max |difference| from gradient.h <TAB> note"), and prints for each
row of bench: the hand-written C time and the ratio of each one's time to it (lower is better), then
each peer's largest difference from gradient.h's results and its notes.
Usage: table.py OURS.txt label=PEER.txt ... (missing files: that peer's column shows "-")."""
import os
import sys

LABELS = {"numpy": "NumPy", "torch": "PyTorch", "adolc": "ADOL-C"}


def number(s):
    try:
        return float(s)
    except ValueError:
        return None


def read_ours(path):
    rows = []
    with open(path) as f:
        for line in f:
            p = [x.strip() for x in line.split("|")]
            if len(p) >= 5 and number(p[2]) is not None and number(p[3]) is not None:
                rows.append((p[1], float(p[2]), float(p[3])))
    return rows


def read_peer(path):
    rows = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if len(p) >= 5 and p[0] == "peer-row":
                    rows[p[1]] = (float(p[2]), p[3], p[4])
    return rows


def ratio(x):
    return "%.2f" % x if x < 10 else "%.1f" % x if x < 100 else "{:,.0f}".format(x)


def main():
    ours = read_ours(sys.argv[1])
    peers = []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        peers.append((LABELS.get(label, label), read_peer(path)))
    head = ["workload (bench.c row)", "hand C ms", "gradient.h"] + [p[0] for p in peers]
    print("\nratio = time / hand-written C time of the same run (lower is better); '-': not run")
    print("| " + " | ".join(head) + " |")
    print("|---|---:|" + "---:|" * (len(head) - 2))
    bad = 0
    for name, t_gr, t_hand in ours:
        cells = [name, "%.4g" % t_hand, ratio(t_gr / t_hand)]
        for _, rows in peers:
            cells.append(ratio(rows[name][0] / t_hand) if name in rows else "-")
        print("| " + " | ".join(cells) + " |")
    print("\nlargest |peer result - gradient.h's| over the row's outputs, and the peers' notes")
    for label, rows in peers:
        if not rows:
            continue
        print("%s:" % label)
        for name, _, _ in ours:
            if name in rows:
                ms, diff, note = rows[name]
                bad += "MISMATCH" in note
                print("  %-50s %10.4g ms  max diff %-9s %s" % (name, ms, diff, note))
    return 1 if bad or not ours else 0


sys.exit(main())
