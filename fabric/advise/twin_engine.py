"""Which routing engine a twin runs to stand for the site's subnet manager, from evidence. Pure.

The twin's OpenSM routes as the site's SM would only if it runs the same engines in the same order
(an engine that fails hands over to the next, and after the last to minhop). The evidence, each
piece named with where it was read:

* the operator's ``--engine`` (an OpenSM ``-R`` list): taken as given; the evidence that disagrees
  with it is said beside it;
* **the SM's log**: the engines of its last routing, in order: those that failed
  (``ucast_mgr_route: ftree: cannot build lid matrices``) and the one that configured the
  switches (``updn tables configured on all switches``);
* **opensm.conf** (a site's, or UFM's ``/opt/ufm/files/conf/opensm/opensm.conf``):
  ``routing_engine``, the list the SM runs from its start; where the log names an engine of that
  list, the list gives the fallbacks after it too;
* **the switches' adaptive routing** (ibdiagnet's AR_INFO, or an AR engine in the log): NVIDIA's
  AR engines (``ar_updn``, ``ar_ftree``...) are not in the twin's upstream OpenSM, so such a site's
  routing is unknown to the twin.

Nothing is guessed: without evidence and without ``--engine`` the engine is unknown, the choice
says why, and a routing check on the twin is refused.

>>> choose_engine(log_engine="minhop", log_failed=("ftree",), log_source="opensm.log").routing
'ftree,minhop'
>>> choose_engine().known
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fabric.advise.subnet_manager import AR_ENGINES

# The engines of the twin's OpenSM (upstream 3.3: `opensm --help`), and the word that stops it
# falling back to minhop after the last.
TWIN_ENGINES = (
    "minhop",
    "updn",
    "dnup",
    "file",
    "ftree",
    "lash",
    "dor",
    "torus-2QoS",
    "nue",
    "dfsssp",
    "sssp",
)
NO_FALLBACK = "no_fallback"
ASK = "give the SM's log (--sm-log: opensm.log, or UFM's /opt/ufm/files/log/opensm.log), its opensm.conf (--sm-conf) or --engine"


@dataclass(frozen=True)
class EngineChoice:
    """The engine list the twin runs (OpenSM's ``-R``), where it came from, and the evidence."""

    routing: str | None  # None: the site's engine is unknown, no check can rest on it
    source: str  # "--engine", "OpenSM log PATH", "opensm.conf PATH" ("" when unknown)
    evidence: tuple[str, ...] = ()  # what each source says, with where it was read
    unknown: str = ""  # why the site's engine is unknown ("" when known)
    operator: bool = False  # the operator chose it

    @property
    def known(self) -> bool:
        return self.routing is not None

    @property
    def engines(self) -> tuple[str, ...]:
        return tuple(e for e in (self.routing or "").split(",") if e and e != NO_FALLBACK)

    def to_dict(self) -> dict[str, Any]:
        return {
            "routing": self.routing,
            "source": self.source or None,
            "evidence": list(self.evidence),
            "unknown": self.unknown or None,
            "operator": self.operator,
        }


def engine_list(text: str) -> tuple[str, ...] | None:
    """``text`` as an engine list the twin's OpenSM can run (None: it names one it lacks)."""
    if text.strip() == "(null)":  # opensm.conf's own way of saying "the default": minhop
        return ("minhop",)
    names = tuple(e.strip() for e in text.split(",") if e.strip())
    if not names or any(e not in TWIN_ENGINES and e != NO_FALLBACK for e in names):
        return None
    return names


def choose_engine(
    operator: str | None = None,
    *,
    log_engine: str | None = None,
    log_failed: Sequence[str] = (),
    log_source: str = "",
    conf_engine: str | None = None,
    conf_source: str = "",
    switch_ar: str | None = None,
    ar_source: str = "",
) -> EngineChoice:
    """The twin's engine from the operator's choice and the evidence (``switch_ar``: ``on``,
    ``mixed`` or ``off`` from the switches' AR state, None when not read)."""
    evidence = []
    if log_engine is not None:
        failed = f" after {', '.join(log_failed)} could not route" if log_failed else ""
        evidence.append(f"the SM's log ({log_source}) says {log_engine} configured the switches{failed}")
    elif log_source:
        evidence.append(f"the SM's log ({log_source}) names no engine that configured the switches")
    if conf_engine is not None:
        evidence.append(
            f"opensm.conf ({conf_source}) sets routing_engine {conf_engine} (what the SM runs from its start)"
        )
    if switch_ar in ("on", "mixed"):
        evidence.append(f"{ar_source}: adaptive routing is {switch_ar} on the switches")

    if operator is not None:
        names = engine_list(operator)
        if names is None:
            return EngineChoice(
                None,
                "--engine",
                tuple(evidence),
                f"--engine {operator}: the twin's OpenSM has {', '.join(TWIN_ENGINES)} (and {NO_FALLBACK})",
                True,
            )
        if not evidence:
            evidence.append(
                f"the site's engine is unknown ({ASK}); checked with {operator}, the engine chosen"
            )
        return EngineChoice(",".join(names), "--engine", tuple(evidence), "", True)

    ar_engine = log_engine is not None and log_engine.startswith(AR_ENGINES)
    if ar_engine or switch_ar in ("on", "mixed"):
        what = (
            f"the SM runs {log_engine}" if ar_engine else f"adaptive routing is {switch_ar} on the switches"
        )
        return EngineChoice(
            None,
            "",
            tuple(evidence),
            f"{what} (NVIDIA's adaptive routing), which the twin's upstream OpenSM does not have; "
            "give --engine with the static engine to check against (e.g. updn)",
        )
    if log_engine is not None:
        if log_engine not in TWIN_ENGINES:
            return EngineChoice(
                None,
                "",
                tuple(evidence),
                f"the SM's log names {log_engine}, an engine the twin's OpenSM lacks",
            )
        conf = engine_list(conf_engine) if conf_engine else None
        if conf is not None and log_engine in conf:
            return EngineChoice(
                ",".join(conf),
                f"opensm.conf {conf_source} (the log's {log_engine} among them)",
                tuple(evidence),
            )
        known_failed = [e for e in log_failed if e in TWIN_ENGINES]
        return EngineChoice(
            ",".join((*known_failed, log_engine)), f"OpenSM log {log_source}", tuple(evidence)
        )
    if conf_engine is not None:
        conf = engine_list(conf_engine)
        if conf is None:
            return EngineChoice(
                None,
                "",
                tuple(evidence),
                f"opensm.conf sets routing_engine {conf_engine}, which the twin's OpenSM lacks",
            )
        return EngineChoice(",".join(conf), f"opensm.conf {conf_source}", tuple(evidence))
    return EngineChoice(None, "", tuple(evidence), f"no evidence of the SM's routing engine: {ASK}")
