"""Protocol variants with one of Kafka's fixes taken out, to show what the fix closes (docs/history.md,
steps 7 and 8). Load them with `--plugin`:

    kafka-mc check --plugin scenarios/findings/without_fixes.py --protocol kip-966-without-kafka-15221 \
        --replicas 2 --messages 1 --crashes 2 --elections 1 --disk-failures 2 --delays 1 --keep-going

No release is either of them: each is `kip-966` (Kafka 4.1) with one rule of an older release.
"""

import dataclasses

from kafka_mc.model import PROTOCOLS, register_protocol
from kafka_mc.model.protocols import LIVE_MEMBERS, STALE_FETCH_UPDATES

# KIP-903 (3.5) taken out: the controller checks KIP-841's live members only, and without broker epochs
# nothing fences a stale fetch either (ZooKeeper mode's rules)
WITHOUT_KIP_903 = register_protocol(dataclasses.replace(
    PROTOCOLS["kip-966"], name="kip-966-without-kip-903", release="none",
    summary="KIP-966 with KIP-841's controller but no broker epochs", isr_updates=LIVE_MEMBERS,
    stale_fetch=STALE_FETCH_UPDATES))

# KAFKA-15221 (3.7) taken out: the leader takes a fetch of a follower's earlier incarnation
WITHOUT_KAFKA_15221 = register_protocol(dataclasses.replace(
    PROTOCOLS["kip-966"], name="kip-966-without-kafka-15221", release="none",
    summary="KIP-966 whose leader takes a fetch from a follower's earlier incarnation",
    stale_fetch=STALE_FETCH_UPDATES))
