"""The numbers of the paper's Tables 2-10 (section 4), transcribed from thors-paper.tex.

``COST[table][classifier][method] = (mean, sd)``, ``WINLOSS[table][classifier][method] =
(wins, losses)`` of THORS against ``method``, ``TIME[table][classifier][method] = seconds``.
Tables are keyed by the paper's data set: ``"trucks"`` (Tables 2-4), ``"income"``
(Tables 5-7), ``"telescope"`` (Tables 8-10).
"""

from __future__ import annotations

__all__ = ["COST", "PAPER_TABLES", "STATED_COSTS", "TIME", "WINLOSS"]

M6 = ("THORS", "Null", "Theoretical", "Empirical", "MetaCost", "CRS")
WL5 = ("Theoretical", "Null", "Empirical", "MetaCost", "CRS")
T4 = ("THORS", "Empirical", "MetaCost", "CRS")


def _cost(rows: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, tuple[float, float]]]:
    return {clf: dict(zip(M6, vals, strict=True)) for clf, vals in rows.items()}


def _wl(rows: dict[str, list[tuple[int, int]]]) -> dict[str, dict[str, tuple[int, int]]]:
    return {clf: dict(zip(WL5, vals, strict=True)) for clf, vals in rows.items()}


def _time(rows: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {clf: dict(zip(T4, vals, strict=True)) for clf, vals in rows.items()}


#: Table numbers of each data set's (cost, win/loss, time) tables.
PAPER_TABLES = {"trucks": (2, 3, 4), "income": (5, 6, 7), "telescope": (8, 9, 10)}

#: Costs as stated in the paper's text: (FN, FP).
STATED_COSTS = {"trucks": (500.0, 1.0), "income": (100.0, 10.0), "telescope": (100.0, 20.0)}

COST = {
    "trucks": _cost({
        "Logit": [(12169, 1277), (115099, 1118), (117962, 126), (15571, 8354), (120671, 2743), (116602, 885)],
        "DT": [(12639, 1228), (57669, 4836), (117962, 126), (17613, 14495), (117962, 126), (32092, 3772)],
        "NB": [(12550, 1664), (17592, 2282), (16883, 2173), (16934, 2446), (12396, 1432), (17640, 2819)],
        "LDA": [(13025, 1484), (39097, 3656), (29770, 2905), (33598, 6477), (33802, 3037), (34464, 3249)],
    }),
    "income": _cost({
        "Logit": [(35469, 1371), (35584, 1066), (49144, 400), (46176, 2593), (36817, 1117), (44717, 3190)],
        "LDA": [(35689, 934), (95099, 2497), (36252, 967), (45749, 3417), (39382, 1009), (39492, 1603)],
        "NB": [(32901, 934), (108761, 2883), (67100, 3360), (49455, 303), (110869, 2667), (88787, 5488)],
        "RF": [(29419, 779), (57135, 2131), (30415, 1338), (29507, 1172), (29769, 1497), (32378, 1185)],
    }),
    "telescope": _cost({
        "Logit": [(21773, 544), (24713, 241), (23534, 592), (21606, 586), (24565, 514), (24713, 241)],
        "LDA": [(23924, 713), (60858, 2028), (23833, 600), (24500, 351), (25301, 595), (24334, 910)],
        "NB": [(24613, 532), (84904, 2550), (65014, 2675), (24713, 241), (82121, 2291), (73854, 3756)],
        "RF": [(16948, 596), (32836, 2131), (16633, 394), (20142, 1080), (17735, 802), (18313, 982)],
    }),
}

WINLOSS = {
    "trucks": _wl({
        "Logit": [(20, 0), (20, 0), (15, 5), (20, 0), (20, 0)],
        "DT": [(20, 0), (20, 0), (10, 10), (20, 0), (20, 0)],
        "NB": [(20, 0), (20, 0), (20, 0), (8, 12), (20, 0)],
        "LDA": [(20, 0), (20, 0), (20, 0), (20, 0), (20, 0)],
    }),
    "income": _wl({
        "Logit": [(20, 0), (12, 8), (20, 0), (18, 2), (20, 0)],
        "LDA": [(18, 2), (20, 0), (20, 0), (20, 0), (20, 0)],
        "NB": [(20, 0), (20, 0), (20, 0), (20, 0), (20, 0)],
        "RF": [(17, 3), (20, 0), (13, 7), (11, 9), (20, 0)],
    }),
    "telescope": _wl({
        "Logit": [(20, 0), (13, 7), (20, 0), (20, 0), (20, 0)],
        "LDA": [(9, 11), (20, 0), (16, 4), (19, 1), (16, 4)],
        "NB": [(20, 0), (20, 0), (13, 7), (20, 0), (20, 0)],
        "RF": [(7, 13), (20, 0), (20, 0), (20, 0), (19, 1)],
    }),
}

TIME = {
    "trucks": _time({
        "Logit": [1.60, 17.61, 6.92, 0.27],
        "DT": [2.93, 45.60, 33.06, 0.94],
        "NB": [1.33, 11.77, 0.71, 0.07],
        "LDA": [1.60, 13.25, 1.98, 0.10],
    }),
    "income": _time({
        "Logit": [1.01, 15.88, 41.51, 0.66],
        "LDA": [0.98, 13.11, 27.88, 0.46],
        "NB": [0.83, 10.94, 0.43, 0.05],
        "RF": [1.32, 54.39, 13.84, 0.53],
    }),
    "telescope": _time({
        "Logit": [0.55, 11.45, 14.74, 0.56],
        "LDA": [0.50, 9.51, 9.93, 0.39],
        "NB": [0.48, 9.10, 7.52, 0.30],
        "RF": [0.77, 37.98, 24.85, 0.34],
    }),
}
