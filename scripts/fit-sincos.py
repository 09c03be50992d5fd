#!/usr/bin/env python3
# Fits the polynomials of codegen/emitter/FastMath.cpp: sin r = r + r^3 p(r^2) and
# cos r = 1 - r^2/2 + r^4 q(r^2) on |r| <= 1.02 pi/4, near-minimax in relative
# error (Lawson-weighted least squares on Chebyshev points), then measures
# their error in ulps with every step rounded to f32. Pure Python.
import math, struct
def f32(v): return struct.unpack('f', struct.pack('f', v))[0]
def solve(A, y):
    n=len(A[0]); M=[[sum(A[k][i]*A[k][j] for k in range(len(A))) for j in range(n)]+[sum(A[k][i]*y[k] for k in range(len(A)))] for i in range(n)]
    for c in range(n):
        p=max(range(c,n),key=lambda r:abs(M[r][c])); M[c],M[p]=M[p],M[c]
        for r in range(n):
            if r!=c:
                f=M[r][c]/M[c][c]; M[r]=[a-f*b for a,b in zip(M[r],M[c])]
    return [M[i][n]/M[i][i] for i in range(n)]
R=math.pi/4*1.02; N=1500
ts=[(R*math.cos(math.pi*(k+0.5)/(2*N)))**2 for k in range(N)]
def lawson(basis, target, weightfn, iters=60):
    w=[1.0]*len(ts)
    for _ in range(iters):
        A=[[math.sqrt(w[k])*bf for bf in basis(t)] for k,t in enumerate(ts)]
        y=[math.sqrt(w[k])*target(t) for k,t in enumerate(ts)]
        c=solve(A,y)
        err=[abs(sum(ci*bf for ci,bf in zip(c,basis(t)))-target(t))*weightfn(t) for t in ts]
        s=sum(wk*e for wk,e in zip(w,err)); w=[wk*e/s*len(ts) for wk,e in zip(w,err)]
    return c, max(err)
# sin r = r + r^3 (a1 + a2 t + a3 t^2): fit g(t) = (sin r - r)/r^3, weight by r^3/sin r (relative)
def sg(t):
    r=math.sqrt(t); return (math.sin(r)-r)/(r**3) if r>1e-4 else -1/6+t/120
cs,es=lawson(lambda t:[1,t,t*t], sg, lambda t: (t*math.sqrt(t))/max(math.sin(math.sqrt(t)),1e-300) if t>0 else 0)
# cos r = 1 - t/2 + t^2 (b2 + b3 t + b4 t^2)
def cg(t):
    r=math.sqrt(t); return (math.cos(r)-1+t/2)/(t*t) if r>1e-3 else 1/24-t/720
cc,ec=lawson(lambda t:[1,t,t*t], cg, lambda t: t*t/math.cos(math.sqrt(t)))
print("sin", [f32(c) for c in cs], es); print("cos", [f32(c) for c in cc], ec)
# float32 simulation of the polynomial evaluation, ulp error
def fma(a,b,c): return f32(a*b+c)
S=[f32(c) for c in cs]; C=[f32(c) for c in cc]
def sinp(r):
    r2=f32(r*r); p=fma(fma(S[2],r2,S[1]),r2,S[0]); return fma(f32(p*r2),r,r)
def cosp(r):
    r2=f32(r*r); p=fma(fma(fma(C[2],r2,C[1]),r2,C[0]),r2,-0.5); return fma(p,r2,1.0)
def ulp(v): 
    e=math.frexp(abs(v))[1]; return 2.0**(e-24)
ms=mc=0
for k in range(1,200001):
    r=f32(R*k/200000)
    ms=max(ms,abs(sinp(r)-math.sin(r))/ulp(math.sin(r))); mc=max(mc,abs(cosp(r)-math.cos(r))/ulp(math.cos(r)))
print("max ulp sin", ms, "cos", mc)
# pi/2 as three f32 parts for the Cody-Waite reduction, each the rounding of
# what the previous parts miss (pi to 50 digits, exact rational arithmetic).
from fractions import Fraction
half_pi = Fraction("1.5707963267948966192313216916397514420985846996876")
parts = []
for _ in range(3):
    p = f32(float(half_pi - sum(parts, Fraction(0))))
    parts.append(Fraction(p))
print("pi/2 parts", [float(p).hex() for p in parts], [struct.pack('>f', float(p)).hex() for p in parts])
