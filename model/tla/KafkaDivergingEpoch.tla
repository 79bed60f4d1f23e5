------------------------ MODULE KafkaDivergingEpoch -------------------------
(***************************************************************************)
(* Variant `diverging-epoch` (Kafka 2.8.0): truncation on the fetch        *)
(* response's diverging epoch (Kafka 2.8.0).                               *)
(*                                                                         *)
(* Kafka 2.7 leader side, KAFKA-10554 follower side in 2.8.0: each fetch   *)
(* carries `lastFetchedEpoch`; `Partition.readRecords` answers a diverging *)
(* one with `divergingEpoch` and no records; the follower sets its HW from *)
(* the response (`updateHighWatermark`) and truncates                      *)
(* (`truncateOnFetchResponse`). `ReplicaManager.updateFollowerFetchState`  *)
(* still records the diverging fetch's offset (fixed by KAFKA-13141).      *)
(* Modelled: the response's offset is where the follower truncates,        *)
(* computed when the leader answers, and carries the HW after the leader's *)
(* update; the follower takes the HW and truncates in one event. Where     *)
(* that truncation stops short of the divergence (the follower lacks the   *)
(* leader's epoch and truncates to its own epoch's end first,              *)
(* `AbstractFetcherThread.getOffsetTruncationState`), the HW it took       *)
(* covers records the leader does not have until the next fetch truncates  *)
(* them: KAFKA-14704. Kafka 2.2's KIP-380: the controller sees every       *)
(* bounce by the broker epoch (`KafkaController.processBrokerChange`).     *)
(* KIP-497 (2.7): ISR changes go to the controller as AlterIsr requests    *)
(* (`Partition.prepareIsrExpand`, `KafkaController.processAlterIsr`).      *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'fetch-if- *)
(* epoch'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';      *)
(* truncate_on_fetch = True; diverging_fetch_updates_leader = True;        *)
(* epoch_assign = 'truncate-conflicting'; truncate_at_end = True;          *)
(* diverging_response_hw = True; bounce_noticed = True; hw_needs_min_isr = *)
(* False; eligible_leaders = False; isr_updates = 'alter-isr'; isr_shrink  *)
(* = 'behind-leo'; follower_skips = 'same-epoch'; isr_removal_bump =       *)
(* 'followers-take'; stale_fetch = 'updates-leader'.                       *)
(*                                                                         *)
(* Generated from model/protocols.py by checker/tla_modules.py: do not     *)
(* edit.                                                                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean, EpochBump,
          SkipsSameLeader, MaxDiskFailures, MaxDelays, MetadataLag

VARIABLES replicas, controller, written, crashes, committed, acked, delays, diskFailures

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- FetchAtOnce,
    EpochCache            <- TRUE,
    AssignEpoch           <- TruncateConflicting,
    AssignOnElection      <- TruncateConflicting,
    EpochsAfterTruncate   <- CacheAfterTruncate,
    TruncationPoint       <- Kip279TruncationPoint,
    MayJoinIsr            <- JoinPastEpochStart,
    FetchDivergence       <- FetchDivergenceOffset,
    TruncateOnFetch       <- TRUE,
    RecordsDivergingFetch <- TRUE,
    EpochOnElection       <- TRUE,
    TruncateAtEnd         <- TRUE,
    DivergingResponseHw   <- TRUE,
    BounceNoticed         <- TRUE,
    HwNeedsMinIsr         <- FALSE,
    EligibleLeaders       <- FALSE,
    DropsCaughtUp         <- FALSE,
    SkipsLeaderAndIsr     <- SkipsOwnEpochOnly,
    RemembersLeader       <- FALSE,
    LiveMembersOnly       <- FALSE,
    ChecksBrokerEpochs    <- FALSE,
    FencesStaleFetches    <- FALSE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
