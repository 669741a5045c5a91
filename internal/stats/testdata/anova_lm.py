"""Independent ANOVA for numascope's cross-check test (internal/stats).

Usage: python3 anova_lm.py MANIFEST.json

MANIFEST is a JSON list of designs, each
{"csv": PATH, "response": COL, "factors": [COL, ...], "replicated": BOOL, "log": BOOL};
one process analyses them all (importing statsmodels takes a while) and
prints a JSON list of results, in order.

For each design it fits an ordinary least squares model with statsmodels and
reports its anova_lm table and the main effects (marginal mean minus grand
mean, from pandas). Not replicated, the model leaves out the highest-order
interaction, which becomes the residual, as in the design without
replication. With log, it analyses the natural logarithm of the response.
"""
import json
import sys

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm


def analyse(path, response, factors, replicated, log):
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
    return out


def main():
    with open(sys.argv[1]) as f:
        designs = json.load(f)
    out = [analyse(d["csv"], d["response"], d["factors"], d["replicated"], d["log"]) for d in designs]
    json.dump(out, sys.stdout)


main()
