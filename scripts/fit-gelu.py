#!/usr/bin/env python3
# Fits the GELU polynomials of codegen/emitter/FastMath.cpp: Phi(-a) = 2^Q(a) for
# a = |x| in [0, 6], Q of the degree given (7 if none: f16 results; 5:
# bf16 results), near-minimax in absolute error of Q
# (= relative error of Phi(-a): Lawson-weighted least squares on Chebyshev
# points), then measures with every step rounded to f32: the relative
# error of Phi(-a) on [0, 4], that Q keeps falling past 6 (so that the
# clamp at 13 gives 2^Q < 2^-126, flushed to zero). Pure Python.
import math, struct, sys
def f32(v): return struct.unpack('f', struct.pack('f', v))[0]
def log2_phi_minus(a): return math.log2(0.5 * math.erfc(a / math.sqrt(2)))
def solve(rows, ys, ws):
    n = len(rows[0])
    M = [[sum(w * r[i] * r[j] for r, w in zip(rows, ws)) for j in range(n)] +
         [sum(w * r[i] * y for r, y, w in zip(rows, ys, ws))] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c])); M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c:
                f = M[r][c] / M[c][c]; M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]
DEG, A, N = int(sys.argv[1]) if len(sys.argv) > 1 else 7, 6.0, 400
s = A / 2
xs = [s * (1 - math.cos(math.pi * (i + 0.5) / N)) for i in range(N)]
# The basis (a/s - 1)^k keeps the normal equations well conditioned.
rows = [[(x / s - 1) ** k for k in range(DEG + 1)] for x in xs]
ys = [log2_phi_minus(x) for x in xs]
ws = [1.0] * N
for _ in range(60):
    c = solve(rows, ys, ws)
    err = [abs(sum(ci * r for ci, r in zip(c, row)) - y) for row, y in zip(rows, ys)]
    m = max(err); ws = [w * (e / m + 1e-3) for w, e in zip(ws, err)]
    t = sum(ws); ws = [w / t for w in ws]
mono = [0.0] * (DEG + 1)
for k, ck in enumerate(c):
    for j in range(k + 1):
        mono[j] += ck * math.comb(k, j) * s ** -j * (-1) ** (k - j)
mono = [f32(v) for v in mono]
def q(a):
    v = mono[-1]
    for cc in reversed(mono[:-1]):
        v = f32(v * a + cc)  # one FMA
    return v
worst = max((abs(2.0 ** q(f32(i / 1000)) / (0.5 * math.erfc(i / 1000 / math.sqrt(2))) - 1), i / 1000)
            for i in range(4001))
falls = all(q(f32(6 + i / 100)) > q(f32(6 + (i + 1) / 100)) for i in range(700))
print("coefficients, a^0 first:", [v.hex() for v in mono])
print("max relative error of Phi(-a) on [0, 4]: %.2e at a = %.3f" % worst)
print("Q falls on [6, 13]:", falls, "; Q(13) = %.1f" % q(13.0))
