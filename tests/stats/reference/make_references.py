"""Compute the external reference values the stats tests compare against.

Run once from the repository root (needs statsmodels and scikit-learn, which fairjudge itself
does not depend on) and commit the JSON it writes beside this file:

    python -m pip install statsmodels scikit-learn
    python tests/stats/reference/make_references.py

Every set is produced by another library's implementation, never by fairjudge, so the tests
check fairjudge against an independent answer:

- ``mcnemar.json``   statsmodels ``mcnemar`` (chi-square with/without continuity correction,
  exact binomial) for the debiasing study's Table 4 counts and a few edge cases.
- ``holm.json``      statsmodels ``multipletests(method="holm")``.
- ``wilson.json``    statsmodels ``proportion_confint(method="wilson")``.
- ``kappa.json``     scikit-learn ``cohen_kappa_score`` on 3-class examples, missing
  predictions coded as the extra category "none".
- ``logistic.json``  statsmodels ``Logit`` / ``GLM(Binomial)`` (unpenalised) and
  scikit-learn ``LogisticRegression(C=1/l2)`` (ridge, intercept unpenalised) on seeded data,
  stored with the data.

Imports happen inside ``main`` so that pytest's doctest collection can import this module
without the optional packages.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Table 4 of the debiasing study (b: baseline right & strategy wrong, c: the reverse) and the
# chi-square values it prints, plus edge cases (b = c, |b - c| = 1, tiny counts).
TABLE4 = [
    ("Claude Sonnet 4", "B0 vs. S8", 23, 69, 22.01),
    ("Gemini 2.5 Flash", "B0 vs. S8", 17, 47, 13.14),
    ("Claude Sonnet 4", "B0 vs. S5", 33, 62, 8.25),
    ("Gemini 2.5 Flash", "B0 vs. S1", 12, 31, 7.53),
    ("Llama 3.3-70B", "B0 vs. S8", 27, 45, 4.01),
    ("Llama 3.3-70B", "B0 vs. S1", 14, 26, 3.02),
    ("Gemini 2.5 Pro", "B0 vs. S1", 16, 19, 0.11),
    ("GPT-4o", "B0 vs. S1", 30, 39, 0.93),
    ("GPT-4o", "B0 vs. S8", 39, 42, 0.05),
]
EXTRA_COUNTS = [(5, 6), (0, 7), (3, 0), (1, 2), (10, 25), (100, 130)]


def _versions() -> dict:
    import numpy
    import scipy
    import sklearn
    import statsmodels

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "statsmodels": statsmodels.__version__,
            "scikit-learn": sklearn.__version__}


def mcnemar_references() -> dict:
    from statsmodels.stats.contingency_tables import mcnemar

    rows = []
    for model, comparison, b, c, printed in TABLE4 + [("extra", "", b, c, None)
                                                      for b, c in EXTRA_COUNTS]:
        # Rows: baseline right/wrong; columns: other right/wrong. b and c are the off-diagonal.
        table = [[50, b], [c, 50]]
        corrected = mcnemar(table, exact=False, correction=True)
        plain = mcnemar(table, exact=False, correction=False)
        exact = mcnemar(table, exact=True)
        rows.append({"model": model, "comparison": comparison, "b": b, "c": c,
                     "printed_chi2": printed,
                     "chi2_corrected": float(corrected.statistic),
                     "p_corrected": float(corrected.pvalue),
                     "chi2_uncorrected": float(plain.statistic),
                     "p_uncorrected": float(plain.pvalue),
                     "exact_p": float(exact.pvalue)})
    return {"source": "statsmodels.stats.contingency_tables.mcnemar", "rows": rows}


def holm_references() -> dict:
    import numpy as np
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(20240501)
    cases = [
        [0.01, 0.04, 0.03, 0.005],
        [0.0001, 0.0009, 0.004, 0.006, 0.045, 0.082, 0.735, 0.336, 0.824],  # Table 4/5 p's
        [0.02, 0.02, 0.02, 0.5],  # ties
        [0.3, 0.9, 0.6],          # adjusted values hit the cap of 1
        [0.04],
        [float(p) for p in rng.uniform(0, 0.2, 20)],  # m = 20, as in the study
    ]
    return {"source": "statsmodels.stats.multitest.multipletests(method='holm')",
            "cases": [{"p_values": case,
                       "adjusted": [float(v) for v in multipletests(case, method="holm")[1]]}
                      for case in cases]}


def wilson_references() -> dict:
    from statsmodels.stats.proportion import proportion_confint

    cases = [(284, 400, 0.95), (7, 10, 0.95), (0, 25, 0.95), (25, 25, 0.95), (1, 1, 0.9),
             (13, 50, 0.99), (200, 400, 0.5), (3, 1000, 0.95)]
    return {"source": "statsmodels.stats.proportion.proportion_confint(method='wilson')",
            "cases": [{"successes": s, "n": n, "level": level,
                       "low": float(proportion_confint(s, n, alpha=1 - level,
                                                       method="wilson")[0]),
                       "high": float(proportion_confint(s, n, alpha=1 - level,
                                                        method="wilson")[1])}
                      for s, n, level in cases]}


def kappa_references() -> dict:
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    labels = ["a", "b", "tie"]
    rng = np.random.default_rng(7)
    gold = rng.choice(labels, size=400, p=[158 / 400, 145 / 400, 97 / 400])
    # A judge right ~70% of the time, otherwise a random label, with 3% missing verdicts.
    predicted = np.where(rng.random(400) < 0.7, gold, rng.choice(labels, size=400))
    predicted = predicted.astype(object)
    predicted[rng.random(400) < 0.03] = None
    cases = [
        {"name": "textbook 3-class", "gold": ["a", "a", "a", "b", "b", "tie", "tie", "tie", "a",
                                              "b"],
         "predicted": ["a", "a", "b", "b", "b", "tie", "a", "tie", "a", "tie"]},
        {"name": "with missing predictions", "gold": ["a", "b", "tie", "a", "b", "tie", "a"],
         "predicted": ["a", None, "tie", "a", "a", None, "b"]},
        {"name": "simulated MT-Bench-sized", "gold": gold.tolist(),
         "predicted": [None if p is None else str(p) for p in predicted]},
    ]
    for case in cases:
        coded = ["none" if p is None else p for p in case["predicted"]]
        case["kappa"] = float(cohen_kappa_score(case["gold"], coded,
                                                labels=labels + ["none"]))
    return {"source": "sklearn.metrics.cohen_kappa_score(gold, predicted_with_none, "
                      "labels=['a', 'b', 'tie', 'none'])", "cases": cases}


def logistic_references() -> dict:
    import numpy as np
    import statsmodels.api as sm
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(12345)
    n = 200
    # Features on different scales: a length ratio, a markdown flag, a log-length difference.
    X = np.column_stack([rng.normal(1.0, 0.5, n), rng.integers(0, 2, n).astype(float),
                         rng.normal(0.0, 3.0, n)])
    eta = -0.4 + 0.8 * X[:, 0] + 0.9 * X[:, 1] - 0.15 * X[:, 2]
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)

    logit = sm.Logit(y, sm.add_constant(X)).fit(method="newton", tol=1e-14, maxiter=100,
                                                disp=0)
    unpenalised = {"params": logit.params.tolist(), "bse": logit.bse.tolist(),
                   "llf": float(logit.llf)}

    penalised = []
    for l2 in (0.5, 5.0):
        model = LogisticRegression(C=1 / l2, solver="newton-cholesky", tol=1e-14,
                                   max_iter=1000).fit(X, y)
        penalised.append({"l2": l2, "intercept": float(model.intercept_[0]),
                          "coef": model.coef_[0].tolist()})

    # Fractional responses (order-averaged preferences) with case weights. statsmodels'
    # binomial GLM takes fractional endog directly; scikit-learn needs each row split into a
    # success of weight w*y and a failure of weight w*(1-y).
    m = 120
    Xf = np.column_stack([rng.normal(0.0, 1.0, m), rng.normal(2.0, 1.5, m)])
    pf = 1 / (1 + np.exp(-(0.3 + 0.7 * Xf[:, 0] - 0.4 * Xf[:, 1])))
    first, second = rng.random(m) < pf, rng.random(m) < pf
    yf = (first.astype(float) + second.astype(float)) / 2
    wf = rng.uniform(0.5, 2.0, m)
    glm = sm.GLM(yf, sm.add_constant(Xf), family=sm.families.Binomial(),
                 var_weights=wf).fit(tol=1e-14, maxiter=100)
    fractional = {"params": glm.params.tolist(), "bse": glm.bse.tolist()}
    X2 = np.vstack([Xf, Xf])
    y2 = np.r_[np.ones(m), np.zeros(m)]
    w2 = np.r_[wf * yf, wf * (1 - yf)]
    keep = w2 > 0
    model = LogisticRegression(C=1 / 2.0, solver="newton-cholesky", tol=1e-14,
                               max_iter=1000).fit(X2[keep], y2[keep], sample_weight=w2[keep])
    fractional_penalised = {"l2": 2.0, "intercept": float(model.intercept_[0]),
                            "coef": model.coef_[0].tolist()}
    return {"source": "statsmodels Logit/GLM(Binomial) and sklearn LogisticRegression("
                      "solver='newton-cholesky', C=1/l2)",
            "binary": {"X": X.tolist(), "y": y.tolist(), "unpenalised": unpenalised,
                       "penalised": penalised},
            "fractional": {"X": Xf.tolist(), "y": yf.tolist(), "weights": wf.tolist(),
                           "unpenalised": fractional, "penalised": fractional_penalised}}


def main() -> None:
    versions = _versions()
    for name, make in (("mcnemar", mcnemar_references), ("holm", holm_references),
                       ("wilson", wilson_references), ("kappa", kappa_references),
                       ("logistic", logistic_references)):
        payload = {"generated_by": "tests/stats/reference/make_references.py",
                   "versions": versions, **make()}
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {path.relative_to(HERE.parent.parent.parent)}")


if __name__ == "__main__":
    main()
