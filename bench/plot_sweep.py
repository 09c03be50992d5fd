"""Draws `kfuse-bench sweep --json FILE`'s rows as an SVG: one panel a
family, a bar a shape, its length the peer's time over kfuse's (right of
the line at 1: kfuse faster; attention against SDPA, rows against
torch.compile, matmuls against cuBLAS). No plotting library: the GPU
machine and CI need none.

    python3 bench/plot_sweep.py sweep.json sweep.svg
"""

import json
import sys

PEER = {"attention": ("peer_ms", "SDPA / kfuse"),
        "rows": ("compiled_ms", "torch.compile / kfuse"),
        "matmul": ("peer_ms", "cuBLAS / kfuse")}
BAR, LABEL, WIDTH, SCALE_MAX = 14, 260, 420, 2.0


def panel(family, rows, top):
    key, title = PEER[family]
    out = [f'<text x="4" y="{top + 14}" font-weight="bold">{family}: '
           f'{title}</text>']
    y = top + 24
    for r in rows:
        ratio = r[key] / r["kfuse_ms"] if r[key] > 0 else 0
        length = min(ratio, SCALE_MAX) / SCALE_MAX * WIDTH
        colour = "#2a7" if ratio >= 1 else "#c33"
        out.append(f'<text x="{LABEL - 6}" y="{y + BAR - 3}" '
                   f'text-anchor="end">{r["name"]}</text>')
        out.append(f'<rect x="{LABEL}" y="{y}" width="{length:.1f}" '
                   f'height="{BAR - 2}" fill="{colour}"/>')
        out.append(f'<text x="{LABEL + length + 4:.1f}" y="{y + BAR - 3}">'
                   f'{ratio:.2f}</text>')
        y += BAR
    one = LABEL + WIDTH / SCALE_MAX
    out.append(f'<line x1="{one}" y1="{top + 20}" x2="{one}" y2="{y}" '
               'stroke="black" stroke-dasharray="3,2"/>')
    return out, y + 10


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as f:
        rows = json.load(f)["rows"]
    body, y = [], 0
    for family in PEER:
        mine = [r for r in rows if r["family"] == family]
        if mine:
            parts, y = panel(family, mine, y)
            body += parts
    width = LABEL + WIDTH + 60
    with open(target, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
                f'height="{y}" font-family="sans-serif" font-size="11">\n')
        f.write("\n".join(body))
        f.write("\n</svg>\n")


if __name__ == "__main__":
    main()
