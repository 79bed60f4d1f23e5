-------------------------- MODULE KafkaKafka13141 ---------------------------
(***************************************************************************)
(* Variant `kafka-13141` (Kafka 3.0): a diverging fetch leaves the         *)
(* leader's view of the follower alone (Kafka 2.8.1, 3.0 on).              *)
(*                                                                         *)
(* KAFKA-13141 (Kafka 2.7.2, 2.8.1, 3.0.0):                                *)
(* `ReplicaManager.updateFollowerFetchState` (and `Partition.fetchRecords` *)
(* since 3.3) updates a follower's fetch state only from a fetch that does *)
(* not diverge.                                                            *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'fetch-if- *)
(* epoch'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';      *)
(* truncate_on_fetch = True; diverging_fetch_updates_leader = False;       *)
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
    RecordsDivergingFetch <- FALSE,
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
