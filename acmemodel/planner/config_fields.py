"""Reading and checking the fields of a planner configuration (:mod:`.config` builds
:class:`~acmemodel.planner.config.ClusterConfig` from them): durations with unit suffixes
(:func:`parse_duration`), the size limits and the safe YAML loader (no aliases bombs, bounded nodes
and strings), the field checks that raise :class:`~acmemodel.errors.ConfigError` naming the field
(``check_number``, ``check_int``, keys, seeds, factors, choices), :func:`read_config_file` (YAML or
TOML) and :func:`with_reliability` (a published failure-rate preset in place of the config's).
Every name stays importable from :mod:`acmemodel.planner.config`.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping

from acmemodel.errors import ConfigError


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
#: the spelled-out units a user writes (``10min``, ``2 hours``, ``3 days``), case-insensitive, to their letter
_UNIT_WORDS = {"sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "m", "mins": "m", "minute": "m",
               "minutes": "m", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "day": "d", "days": "d",
               "week": "w", "weeks": "w"}
_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_duration(value, field_name: str = "duration", *, allow_zero: bool = False) -> float:
    """Seconds from a number or a string with an optional ``s``/``m``/``h``/``d``/``w`` suffix
    (``"90s"``, ``"20m"``, ``"1.5h"``, ``"30d"``, ``"2w"``, ``"90"`` = 90 s) or the unit spelled out
    (``"10min"``, ``"2 hours"``, ``"3 days"``, :data:`_UNIT_WORDS`; ``m`` is minutes, never months).

    The one duration parser of the package (config fields and CLI options). Raises
    :class:`ConfigError` naming ``field_name`` (the field or option) for anything else, negative
    values, or zero (unless ``allow_zero``).
    """
    if isinstance(value, bool):
        raise ConfigError(f"{field_name} must be a duration like 90s, 20m, 8h, 30d or seconds, got {value!r}")
    if isinstance(value, (int, float)):
        sec = float(value)
    elif isinstance(value, str):
        m = _DUR.match(value)
        unit = m.group(2).lower() if m else ""
        unit = _UNIT_WORDS.get(unit, unit) or "s"
        if not m or unit not in _UNITS:
            raise ConfigError(f"{field_name} must be a duration like 90s, 20m, 8h, 30d or seconds, got {value!r}")
        sec = float(m.group(1)) * _UNITS[unit]
    else:
        raise ConfigError(f"{field_name} must be a duration like 90s, 20m, 8h, 30d or seconds, got {value!r}")
    if not math.isfinite(sec) or sec < 0 or (sec == 0 and not allow_zero):
        raise ConfigError(f"{field_name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}")
    return sec


# ------------------------------------------------------------------------------------------ limits
#: largest config file read (bytes)
MAX_CONFIG_BYTES = 1 << 20
#: most YAML aliases (``*name``) a config may use; anchors/aliases beyond that are refused
MAX_ALIASES = 100
#: most values (mapping entries, list items, scalars) a parsed config may hold, counting every
#: use of an aliased value again (so a "billion laughs" document is refused, not expanded)
MAX_NODES = 100_000
#: longest string value or key in a config (characters)
MAX_STRING = 1_000


def _yaml_loader():
    """A ``yaml.SafeLoader`` subclass that refuses duplicate mapping keys and more than
    :data:`MAX_ALIASES` aliases (the safe loader itself constructs only plain data)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        _aliases = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                self._aliases += 1
                if self._aliases > MAX_ALIASES:
                    mark = self.peek_event().start_mark
                    raise ConfigError(f"more than {MAX_ALIASES} YAML aliases (line {mark.line + 1}); "
                                      "write the values out")
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise ConfigError(f"line {key_node.start_mark.line + 1}: a mapping key must be a "
                                      "plain value") from None
                if key in seen:
                    raise ConfigError(f"duplicate key {key!r} (line {key_node.start_mark.line + 1}; first "
                                      f"on line {seen[key] + 1})")
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    return _Loader


#: largest integer magnitude a config may hold (past about 1.8e308 a float conversion overflows)
MAX_ABS_INT = 10 ** 300


def _check_size(data: Any) -> None:
    """Refuse a parsed config with more than :data:`MAX_NODES` values (shared values counted at
    every use) or a string longer than :data:`MAX_STRING`; iterative, stops at the limit."""
    stack, n = [("config", data)], 0
    while stack:
        where, v = stack.pop()
        n += 1
        if n > MAX_NODES:
            raise ConfigError(f"config holds more than {MAX_NODES:,} values (YAML aliases expand to "
                              "copies); refusing to expand it")
        if isinstance(v, str):
            if len(v) > MAX_STRING:
                raise ConfigError(f"{where}: string of {len(v):,} characters (at most {MAX_STRING:,})")
        elif isinstance(v, Mapping):
            for k, x in v.items():
                if isinstance(k, str) and len(k) > MAX_STRING:
                    raise ConfigError(f"{where}: key of {len(k):,} characters (at most {MAX_STRING:,})")
                stack.append((f"{where}.{k}" if where != "config" else str(k), x))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_ABS_INT:
            raise ConfigError(f"{where}: an integer of {len(str(abs(v))):,} digits (at most 300)")


def _str(v, where: str) -> str:
    """A plain string field (job type, cluster, name): not a list/mapping, not empty."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float)) or not str(v).strip():
        raise ConfigError(f"{where} must be a non-empty string, got {v!r}")
    return str(v)


# ------------------------------------------------------------------------------------------ helpers
def _check_keys(d: Any, allowed: set[str], where: str) -> dict:
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where} must be a mapping, got {type(d).__name__}")
    bad = sorted(set(map(str, d)) - allowed)
    if bad:
        raise ConfigError(f"{where} has unknown key(s) {bad}; allowed: {sorted(allowed)}")
    return dict(d)


#: the largest integer a config field may hold (exact in a float64 and in the C kernels' int64)
MAX_INT = 2 ** 53
#: the largest cluster the planner accepts (its simulator keeps per-node state)
MAX_CLUSTER_GPUS = 100_000_000


def _pos_int(v, where: str, *, allow_zero: bool = False, hi: int = MAX_INT) -> int:
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or int(v) != v or v < 0
            or (v == 0 and not allow_zero)):
        raise ConfigError(f"{where} must be a {'non-negative' if allow_zero else 'positive'} integer, got {v!r}")
    if v > hi:
        raise ConfigError(f"{where} must be at most {hi:,}, got {v:,.0f}")
    return int(v)


#: largest seed (numpy's legacy seeds and the C kernels' are 32-bit unsigned)
SEED_MAX = 2**32 - 1


def _seed(v, where: str) -> int:
    """A seed: an integer in 0 .. :data:`SEED_MAX`."""
    v = _pos_int(v, where, allow_zero=True)
    if v > SEED_MAX:
        raise ConfigError(f"{where} must be at most {SEED_MAX:,} (2**32 - 1), got {v!r}")
    return v


def _num(v, where: str, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where} must be a finite number, got {v!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ConfigError(f"{where} must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
    if hi is not None and v > hi:
        raise ConfigError(f"{where} must be <= {hi:g}, got {v!r}")
    return float(v)


#: the field-named checks of the configuration, public for the planner's other validated inputs
#: (evaluation batch, power model): ``check_number(v, where, lo=, hi=, lo_open=)``,
#: ``check_int(v, where, allow_zero=)``
check_number = _num
check_int = _pos_int


def _factors(d, where: str) -> dict[str, float]:
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where} must be a mapping of failure category/type to a factor")
    return {str(k): _num(v, f"{where}.{k}", lo=0.0) for k, v in d.items()}


def _choice(v, where: str, options: tuple[str, ...]) -> str:
    if v not in options:
        raise ConfigError(f"{where} must be one of {', '.join(options)}, got {v!r}")
    return v


def read_config_file(path: str | Path) -> Any:
    """The parsed content of a ``.yaml``/``.yml`` or ``.toml`` configuration file (the one reader of the
    planner's configuration files); :class:`ConfigError` naming the file for a parse error or another
    suffix, ``FileNotFoundError`` for a missing file."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"config file not found: {p}")
    size = p.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {p.name} is {size:,} bytes; at most {MAX_CONFIG_BYTES:,}")
    with open(p, "rb") as f:  # at most the limit: a device or a pipe (/dev/zero) has no size to check
        raw = f.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {p.name} is more than {MAX_CONFIG_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {p.name} is not UTF-8 text (byte {e.start:,})") from None
    suffix = p.suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            import yaml

            # a SafeLoader subclass: plain data only, duplicate keys and alias floods refused
            data = yaml.load(text, Loader=_yaml_loader())  # noqa: S506
            _check_size(data)
            return data
        if suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
            _check_size(data)
            return data
    except ConfigError as e:
        raise ConfigError(f"{p.name}: {e}") from None
    except RecursionError:
        raise ConfigError(f"cannot parse {p.name}: nested too deeply") from None
    except Exception as e:  # parser errors
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"cannot parse {p.name}: {first}") from None
    raise ConfigError(f"config file must end in .yaml, .yml or .toml, got {p.name}")


def with_reliability(data: Any, preset: str, *, where: str = "config") -> dict:
    """A copy of a raw configuration whose failure rate is the reliability preset ``preset`` (the
    ``--reliability`` option): ``failures.reliability`` set, ``failures.mttf/reference_gpus/shape``
    dropped. The preset name is validated when the result is."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: the configuration must be a mapping")
    data = dict(data)
    fs = data.get("failures") or {}
    if not isinstance(fs, Mapping):
        raise ConfigError("failures must be a mapping")
    fs = {k: v for k, v in fs.items() if k not in ("mttf", "reference_gpus", "shape")}
    fs["reliability"] = preset
    data["failures"] = fs
    return data
