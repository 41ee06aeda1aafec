"""``ibfab status``: one ranked answer to "what is wrong with which cable (and host)".

Every source of evidence ibfab has about a fabric is read (:mod:`.gather`): the counter history
(health), what the newest reading says alone (saturated or large counters), the newest sweep's
suspect cables, discovery's wiring anomalies, the cable plan and the stored forwarding tables
judged. Each finding is put on what it is about (:mod:`.evidence`): a cable with both ends
named, a host, a switch, a machine. Entries merge all of an element's evidence, with how sure it
is and the one action ``ibfab recommend`` gives for it, fed the same evidence (:mod:`.merge`).
A clean fabric lists nothing.
"""

from __future__ import annotations

from fabric.app.status.records import Entry, Evidence, EvidenceSource, SourceState, StatusReport
from fabric.app.status.run import fabric_status

__all__ = ["Entry", "Evidence", "EvidenceSource", "SourceState", "StatusReport", "fabric_status"]
