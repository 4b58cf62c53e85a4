#!/usr/bin/python3
"""Reference vectors for tests/consumer/report/test-estimate-scipy.c, from scipy (python3-scipy).

Writes one case a line: "betainc a b x I", "cdf k s p F", "ppf prob s p k", "gammainc a x 0
P", "gammappf prob a 0 x". The C test compares rasp_betainc / rasp_nb_cdf / rasp_gamma_p /
rasp_gamma_quantile (relative error) and rasp_nb_quantile (within 1).
Usage: estimate-vectors.py OUTPUT
"""
import math
import sys

from scipy import stats

S = [1, 2, 3, 5, 8, 10, 30, 100, 300, 1000, 3000, 10000, 100000, 1000000]
P = [1 / 102400, 1 / 4096, 1 / 16777216, 1 / 16]
PROBS = [0.005, 0.025, 0.5, 0.975, 0.995]


def main(path):
    lines = []
    for p in P:
        q = 1 - p
        for s in S:
            for prob in PROBS:
                k = stats.nbinom.ppf(prob, s, p)
                lines.append(f"ppf {prob!r} {s!r} {p!r} {k:.0f}")
            mean, sd = s * q / p, math.sqrt(s * q) / p
            for z in (-4, -2, -1, -0.3, 0, 0.7, 2, 4):
                k = math.floor(mean + z * sd)
                if k < 0:
                    continue
                f = stats.nbinom.cdf(k, s, p)
                if f > 1e-300:
                    lines.append(f"cdf {k} {s!r} {p!r} {f!r}")
    # betainc across the ranges the estimator uses: a = s, b = k + 1 up to 1e10, x = p, and
    # a few generic points on both sides of the continued fraction's swap.
    for a in (1.0, 2.5, 10.0, 1e3, 1e5, 1e7):
        for b in (1.0, 7.0, 1e3, 1e6, 1e8, 1e10, 1e14):
            m = a / (a + b)
            sd = math.sqrt(a * b / (a + b) ** 2 / (a + b + 1))
            for z in (-3, -1, 0, 0.7, 1, 3, 8):
                x = m + z * sd
                if not 0 < x < 1:
                    continue
                # I_x(a, b) = nbinom.cdf(b - 1, a, x) for integer b: Boost's ibeta.
                # special.betainc (Cephes) is off by up to 1e-2 at a = 1e7, b = 1e10.
                v = stats.nbinom.cdf(b - 1, a, x)
                if v > 1e-300:
                    lines.append(f"betainc {a!r} {b!r} {x!r} {v!r}")
    # The regularized lower incomplete gamma and its quantile (the objects interval's), for
    # shapes from 1 (one heavy sample) to 1e6, a few standard deviations either side.
    for a in (1.0, 1.5, 3.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6):
        for z in (-4, -2, -1, -0.3, 0, 0.7, 2, 4):
            x = a + z * math.sqrt(a)
            if x <= 0:
                continue
            v = stats.gamma.cdf(x, a)
            if v > 1e-300:
                lines.append(f"gammainc {a!r} {x!r} 0 {v!r}")
        for prob in PROBS:
            lines.append(f"gammappf {prob!r} {a!r} 0 {stats.gamma.ppf(prob, a)!r}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
