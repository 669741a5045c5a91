"""Independent ANOVA for numascope's cross-check test (internal/stats).

Usage: python3 anova_lm.py MANIFEST.json

MANIFEST is a JSON list of designs, each
{"csv": PATH, "response": COL, "factors": [COL, ...], "replicated": BOOL, "log": BOOL,
"confidence": LEVEL};
one process analyses them all (importing statsmodels takes a while) and
prints a JSON list of results, in order.

For each design it fits an ordinary least squares model with statsmodels and
reports its anova_lm table and the main effects (marginal mean minus grand
mean, from pandas). Not replicated, the model leaves out the highest-order
interaction, which becomes the residual, as in the design without
replication. With log, it analyses the natural logarithm of the response.

It also fits the same model with sum-to-zero coding (patsy's Sum), whose
intercept is the grand mean and whose coefficients are the effects of every
level (or combination of levels) but the last of each factor, and reports
at the design's "confidence" (two-sided): the intercept's and each
coefficient's estimate, standard error and confidence interval (OLS's
conf_int, Student t quantiles from scipy), and for every pair of levels of
each factor the difference of their effects through a t test of that
linear combination of coefficients.

And the residuals: each observation's fitted value and residual (the OLS
fit's fittedvalues and resid, in the file's row order), the largest absolute
residual, the response's range, and the normal QQ plot (the sorted residuals
against scipy's standard normal quantiles at (i - 0.5)/n, i = 1..n) with
numpy's correlation of its points.
"""
import json
import sys

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy.stats import norm
from statsmodels.stats.anova import anova_lm


def interval(est, se, lo, hi):
    return {"estimate": float(est), "stderr": float(se), "low": float(lo), "high": float(hi)}


def sum_coded(df, alias, replicated, alpha):
    """Intervals of the grand mean, of the effects and of the contrasts."""
    terms = ["C(%s, Sum)" % a for a in alias]
    if replicated:
        rhs = "*".join(terms)
    else:
        rhs = "(%s)**%d" % ("+".join(terms), len(alias) - 1)
    model = smf.ols("__y ~ " + rhs, data=df).fit()
    ci = model.conf_int(alpha=alpha)
    out = {"mean_ci": interval(model.params["Intercept"], model.bse["Intercept"], *ci.loc["Intercept"]), "effects": [], "contrasts": []}
    for name in model.params.index:
        if name == "Intercept":
            continue
        # "C(f0, Sum)[S.a]:C(f1, Sum)[S.x]" -> term "A:B", levels ["a", "x"]
        parts = name.split(":")
        term = ":".join(alias[p[2:p.index(",")]] for p in parts)
        levels = [p[p.index("[S.") + 3:-1] for p in parts]
        out["effects"].append({"term": term, "levels": levels,
                               **interval(model.params[name], model.bse[name], *ci.loc[name])})
    names = list(model.params.index)
    for a, f in alias.items():
        levels = sorted(df[a].unique())
        col = lambda l: names.index("C(%s, Sum)[S.%s]" % (a, l))

        def effect(l):
            # The last level's effect is minus the sum of the others'.
            v = np.zeros(len(names))
            if l == levels[-1]:
                for o in levels[:-1]:
                    v[col(o)] = -1
            else:
                v[col(l)] = 1
            return v
        for i in range(len(levels)):
            for j in range(i + 1, len(levels)):
                tt = model.t_test(effect(levels[i]) - effect(levels[j]))
                lo, hi = tt.conf_int(alpha=alpha)[0]
                out["contrasts"].append({"factor": f, "a": levels[i], "b": levels[j],
                                         **interval(tt.effect[0], tt.sd[0][0], lo, hi)})
    return out


def residuals(model, y):
    resid = np.asarray(model.resid, dtype=float)
    n = len(resid)
    normal = norm.ppf((np.arange(1, n + 1) - 0.5) / n)
    qq = np.sort(resid)
    corr = None
    if np.ptp(qq) > 0:
        corr = float(np.corrcoef(normal, qq)[0, 1])
    return {"fitted": [float(v) for v in model.fittedvalues], "resid": [float(v) for v in resid],
            "max_abs": float(np.max(np.abs(resid))), "range": float(np.ptp(y)),
            "qq_normal": [float(v) for v in normal], "qq_resid": [float(v) for v in qq],
            "qq_correlation": corr}


def analyse(path, response, factors, replicated, log, confidence):
    df = pd.read_csv(path, dtype={f: str for f in factors})
    y = df[response].astype(float)
    if log:
        y = np.log(y)
    # Patsy reads names such as C as its own functions: use neutral ones.
    alias = {"f%d" % i: f for i, f in enumerate(factors)}
    df = pd.DataFrame({"__y": y, **{a: df[f] for a, f in alias.items()}})
    terms = ["C(%s)" % a for a in alias]
    if replicated:
        rhs = "*".join(terms)
    else:
        rhs = "(%s)**%d" % ("+".join(terms), len(factors) - 1)
    model = smf.ols("__y ~ " + rhs, data=df).fit()
    table = anova_lm(model, typ=1)
    out = {"terms": [], "residual": None, "mean": float(df["__y"].mean()), "effects": {}}
    for name, row in table.iterrows():
        rec = {"ss": float(row["sum_sq"]), "dof": int(round(row["df"]))}
        if name == "Residual":
            out["residual"] = rec
            continue
        rec["name"] = ":".join(alias[p[2:-1]] for p in name.split(":"))
        rec["f"] = float(row["F"])
        rec["p"] = float(row["PR(>F)"])
        out["terms"].append(rec)
    for f in factors:
        m = df.groupby("f%d" % factors.index(f))["__y"].mean() - df["__y"].mean()
        out["effects"][f] = {str(k): float(v) for k, v in m.items()}
    out["sum_coded"] = sum_coded(df, alias, replicated, 1 - confidence)
    out["residuals"] = residuals(model, df["__y"])
    return out


def main():
    with open(sys.argv[1]) as f:
        designs = json.load(f)
    out = [analyse(d["csv"], d["response"], d["factors"], d["replicated"], d["log"], d["confidence"]) for d in designs]
    json.dump(out, sys.stdout)


main()
