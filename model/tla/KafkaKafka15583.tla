-------------------------- MODULE KafkaKafka15583 ---------------------------
(***************************************************************************)
(* Variant `kafka-15583` (Kafka 3.7.0): the HW stays put while the ISR is  *)
(* below min.insync.replicas (Kafka 3.7 on).                               *)
(*                                                                         *)
(* KAFKA-15583 (Kafka 3.7.0): `Partition.maybeIncrementLeaderHW` starts    *)
(* with `if (isUnderMinIsr) return false`, in ZooKeeper and KRaft mode     *)
(* alike. The rest as `kafka-14704`, read at 3.7.0 in ZooKeeper mode,      *)
(* which KIP-903's broker epochs do not reach ("this proposal just fixes   *)
(* it in Kraft mode").                                                     *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'fetch-if- *)
(* epoch'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';      *)
(* truncate_on_fetch = True; diverging_fetch_updates_leader = False;       *)
(* epoch_assign = 'truncate-conflicting'; truncate_at_end = True;          *)
(* diverging_response_hw = False; bounce_noticed = True; hw_needs_min_isr  *)
(* = True; eligible_leaders = False; isr_updates = 'live-members';         *)
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
    HwNeedsMinIsr         <- TRUE,
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
