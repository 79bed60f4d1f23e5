-------------------------- MODULE KafkaKafka14704 ---------------------------
(***************************************************************************)
(* Variant `kafka-14704` (Kafka 3.4.1): a follower truncates on a          *)
(* diverging fetch response before it takes the HW (Kafka 3.4.1, 3.5 on).  *)
(*                                                                         *)
(* KAFKA-14704 (Kafka 3.4.1, 3.5.0; commit d038cf79191):                   *)
(* `AbstractFetcherThread.processFetchRequest` collects a response's       *)
(* diverging epoch for `truncateOnFetchResponse` and skips                 *)
(* `processPartitionData`, so the follower's HW and log start offset wait  *)
(* for the next fetch. The rest as `kafka-13141`, read at 3.4.1 and 3.5.0  *)
(* (ZooKeeper mode; the controller is the model's), with KIP-841 (3.3):    *)
(* the controller refuses an AlterPartition naming a broker that is not    *)
(* live (`KafkaController.processAlterPartition`).                         *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'fetch-if- *)
(* epoch'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';      *)
(* truncate_on_fetch = True; diverging_fetch_updates_leader = False;       *)
(* epoch_assign = 'truncate-conflicting'; truncate_at_end = True;          *)
(* diverging_response_hw = False; bounce_noticed = True; hw_needs_min_isr  *)
(* = False; eligible_leaders = False; isr_updates = 'live-members';        *)
(* isr_shrink = 'behind-leo'; follower_skips = 'same-epoch';               *)
(* isr_removal_bump = 'followers-take'; stale_fetch = 'updates-leader'.    *)
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
    DivergingResponseHw   <- FALSE,
    BounceNoticed         <- TRUE,
    HwNeedsMinIsr         <- FALSE,
    EligibleLeaders       <- FALSE,
    DropsCaughtUp         <- FALSE,
    SkipsLeaderAndIsr     <- SkipsOwnEpochOnly,
    RemembersLeader       <- FALSE,
    LiveMembersOnly       <- TRUE,
    ChecksBrokerEpochs    <- FALSE,
    FencesStaleFetches    <- FALSE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
