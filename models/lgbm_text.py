"""Checks on LightGBM model text before the library parses it.

LightGBM's C++ parser trusts its input: a truncated ``model.txt`` can abort the whole process
(``terminate called``, exit -6) and a garbage one raises ``LightGBMError`` from deep inside the
library. :func:`check_lightgbm_text` validates the structure first — the ``tree`` header and its
keys, one ``Tree=i`` block per tree (``i`` = 0..n-1, a multiple of ``num_tree_per_iteration``), the
``tree_sizes`` byte counts LightGBM uses to split the text between threads, each tree's arrays
(``num_leaves`` values, ``num_leaves - 1`` splits, child indices in range, features within
``max_feature_idx``), the ``end of trees`` marker and, when present, ``end of parameters`` — and
:func:`booster_from_text` then builds the ``lightgbm.Booster`` from the checked part only
(:func:`library_text`), turning every failure into a :class:`~acmemodel.errors.BundleError` naming
``where`` (the file).
"""
from __future__ import annotations

import math
import re

from acmemodel.errors import BundleError

_TREE_START = re.compile(r"^Tree=(\d+)\n", re.M)
_NUMBERS = re.compile(r"^(?:[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
                      r"(?:[ ,](?=\S)|$))*$", re.I)
_HEADER_KEYS = ("version", "num_class", "num_tree_per_iteration", "max_feature_idx", "feature_names")


def _ints(block: dict, key: str, where: str, n: int) -> list[int]:
    vals = block.get(key, "").split()
    if len(vals) != n:
        raise BundleError(f"{where}: {key} has {len(vals)} values, expected {n}")
    try:
        return [int(v) for v in vals]
    except ValueError:
        raise BundleError(f"{where}: {key} holds a non-integer value") from None


def _floats(block: dict, key: str, where: str, n: int) -> None:
    vals = block.get(key, "").split()
    if len(vals) != n:
        raise BundleError(f"{where}: {key} has {len(vals)} values, expected {n}")
    try:
        ok = all(not math.isnan(float(v)) or v.lower() == "nan" for v in vals)
    except ValueError:
        ok = False
    if not ok:
        raise BundleError(f"{where}: {key} holds a value that is not a number")


def _key_values(text: str) -> dict[str, str]:
    out = {}
    for line in text.split("\n"):
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def _check_acyclic(left: list[int], right: list[int], leaves: int, w: str) -> None:
    """The child arrays form one tree from node 0: every internal node and every leaf (``~k`` for
    leaf ``k``) reached exactly once (a node pointing to itself or an ancestor would make LightGBM's
    prediction loop forever)."""
    seen_inner = [False] * len(left)
    seen_leaf = [False] * leaves
    stack = [0]
    while stack:
        node = stack.pop()
        if node < 0:
            if seen_leaf[~node]:
                raise BundleError(f"{w}: leaf {~node} is reached twice (not a tree)")
            seen_leaf[~node] = True
            continue
        if seen_inner[node]:
            raise BundleError(f"{w}: node {node} is reached twice (a cycle: not a tree)")
        seen_inner[node] = True
        stack.extend((left[node], right[node]))
    if not all(seen_inner) or not all(seen_leaf):
        raise BundleError(f"{w}: some nodes are not reachable from the root (not a tree)")


def check_lightgbm_text(text: str, where: str = "LightGBM model text") -> int:
    """Validate LightGBM model text (module docstring); return the number of trees.

    Raises :class:`BundleError` starting with ``where`` and naming what is wrong.
    """
    if not isinstance(text, str) or not text.strip():
        raise BundleError(f"{where}: empty, not LightGBM model text")
    if not text.startswith("tree\n"):
        raise BundleError(f"{where}: not LightGBM model text (no 'tree' header line)")
    end = text.find("\nend of trees\n")
    if end < 0:
        raise BundleError(f"{where}: truncated LightGBM model text (no 'end of trees' marker)")
    starts = list(_TREE_START.finditer(text, 0, end + 1))
    if not starts:
        raise BundleError(f"{where}: LightGBM model text without trees")
    header = _key_values(text[:starts[0].start()])
    missing = [k for k in _HEADER_KEYS if k not in header]
    if missing:
        raise BundleError(f"{where}: LightGBM header lacks {', '.join(missing)}")
    try:
        per_iter = int(header["num_tree_per_iteration"])
        max_feature = int(header["max_feature_idx"])
        num_class = int(header["num_class"])
    except ValueError:
        raise BundleError(f"{where}: LightGBM header has a non-integer count") from None
    if per_iter < 1 or num_class < 1 or max_feature < 0:
        raise BundleError(f"{where}: LightGBM header counts out of range")
    if len(header["feature_names"].split()) != max_feature + 1:
        raise BundleError(f"{where}: feature_names has {len(header['feature_names'].split())} names, "
                          f"max_feature_idx says {max_feature + 1}")
    n = len(starts)
    if [int(m.group(1)) for m in starts] != list(range(n)):
        raise BundleError(f"{where}: trees are not numbered 0..{n - 1}")
    if n % per_iter:
        raise BundleError(f"{where}: {n} trees is not a multiple of num_tree_per_iteration={per_iter}")
    bounds = [m.start() for m in starts] + [end + 1]
    if "tree_sizes" in header:
        sizes = header["tree_sizes"].split()
        actual = [len(text[a:b].encode()) for a, b in zip(bounds, bounds[1:])]
        if sizes != [str(x) for x in actual]:
            raise BundleError(f"{where}: tree_sizes does not match the {n} tree blocks (damaged text)")
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        w = f"{where}: Tree={i}"
        block = _key_values(text[a:b])
        for k, v in block.items():  # every value of a tree block is a number or a list of numbers
            if k != "Tree" and not _NUMBERS.match(v):
                raise BundleError(f"{w}: {k} holds a value that is not a number")
        try:
            leaves = int(block.get("num_leaves", ""))
        except ValueError:
            raise BundleError(f"{w}: no valid num_leaves") from None
        if leaves < 1:
            raise BundleError(f"{w}: num_leaves = {leaves}")
        _floats(block, "leaf_value", w, leaves)
        for k in ("leaf_weight", "leaf_count"):
            if k in block:
                _floats(block, k, w, leaves)
        if leaves > 1:
            inner = leaves - 1
            feats = _ints(block, "split_feature", w, inner)
            if any(f < 0 or f > max_feature for f in feats):
                raise BundleError(f"{w}: split_feature outside 0..{max_feature}")
            _floats(block, "threshold", w, inner)
            for k in ("split_gain", "internal_value", "internal_weight", "internal_count"):
                if k in block:
                    _floats(block, k, w, inner)
            _ints(block, "decision_type", w, inner)
            children = []
            for side in ("left_child", "right_child"):
                kids = _ints(block, side, w, inner)
                if any(not (-leaves <= k < inner) for k in kids):
                    raise BundleError(f"{w}: {side} refers outside the tree")
                children.append(kids)
            _check_acyclic(children[0], children[1], leaves, w)
            try:
                num_cat = int(block.get("num_cat", "0"))
            except ValueError:
                raise BundleError(f"{w}: num_cat is not an integer") from None
            if num_cat < 0:
                raise BundleError(f"{w}: num_cat = {num_cat}")
            if num_cat:
                bnd = _ints(block, "cat_boundaries", w, num_cat + 1)
                if bnd[0] != 0 or any(y < x for x, y in zip(bnd, bnd[1:])):
                    raise BundleError(f"{w}: cat_boundaries not increasing from 0")
                _ints(block, "cat_threshold", w, bnd[-1])
    tail = text[end:]
    if "\nparameters:\n" in tail and "\nend of parameters\n" not in tail:
        raise BundleError(f"{where}: truncated LightGBM model text (no 'end of parameters' marker)")
    return n


def library_text(text: str) -> str:
    """The part of checked model text handed to LightGBM: the header without ``tree_sizes`` (so the
    library parses the trees one after another, not split between threads by byte counts), the trees,
    ``end of trees`` and a ``pandas_categorical`` line if one is there. The feature importances and
    the training parameters are left out: prediction does not use them, and the library's parser of
    the parameter block aborts the process on a damaged line."""
    end = text.index("\nend of trees\n") + len("\nend of trees\n")
    head = re.sub(r"^tree_sizes=.*\n", "", text[:end], count=1, flags=re.M)
    tail = [ln for ln in text[end:].split("\n") if ln.startswith("pandas_categorical:")]
    return head + ("\n" + tail[-1] + "\n" if tail else "")


def import_lightgbm():
    """The ``lightgbm`` module, imported with ``OMP_WAIT_POLICY=PASSIVE`` in the environment unless it is set
    (OpenMP reads it when the library loads): an OpenMP thread that waits for work sleeps instead of spinning.
    Spinning suits a machine with idle cores; on a shared one (more runnable threads than cores) a
    2-thread training spent 16× the CPU of a 1-thread one (140 s against 8.5 s, load average 9 on 2 cores);
    with passive waiting 1.2×."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import lightgbm

    return lightgbm


#: most LightGBM threads a training in this process may use (``None``: as many as its ``num_threads`` asks);
#: set by :func:`limit_threads`
_THREAD_CAP: int | None = None


def limit_threads(n: int | None) -> None:
    """Cap the LightGBM threads of every later training in this process at ``n`` (``None``: no cap). A resource
    setting, not a model setting: with ``deterministic=True`` and row-wise histograms the trees are the same
    for any thread count (tested), so a fit process that shares the machine's cores with others (the forked
    fit of :func:`acmemodel.pipeline.fit_bundle`) trains on its share without changing the bundle. Measured
    on a busy 2-core machine: the predictor of a 1M-job fleet took 10.8 CPU s with 1 thread and 16.5 with 2."""
    global _THREAD_CAP
    _THREAD_CAP = None if n is None else max(int(n), 1)


def threads(requested: int) -> int:
    """The LightGBM threads of a training that asks for ``requested``: at most the cap of :func:`limit_threads`."""
    return int(requested) if _THREAD_CAP is None else min(int(requested), _THREAD_CAP)


def booster_from_text(text: str, where: str = "LightGBM model text"):
    """``lightgbm.Booster(model_str=text)`` after :func:`check_lightgbm_text`; any failure of the
    library becomes a :class:`BundleError` naming ``where``."""
    lgb = import_lightgbm()

    check_lightgbm_text(text, where)
    try:
        return lgb.Booster(model_str=library_text(text))
    except Exception as e:  # LightGBMError, ValueError, ... from the library's parser
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BundleError(f"{where}: LightGBM cannot read it ({first})") from None
