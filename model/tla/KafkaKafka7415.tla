--------------------------- MODULE KafkaKafka7415 ---------------------------
(***************************************************************************)
(* Variant `kafka-7415` (Kafka 2.0.1): KAFKA-7415 and KAFKA-7128: a new    *)
(* leader caches its epoch at election, a follower joins the ISR only past *)
(* the leader's epoch start; KAFKA-7164: a follower that missed an epoch   *)
(* of the leader it follows truncates again (Kafka 2.0.1).                 *)
(*                                                                         *)
(* Read at 2.0.1: `Partition.makeLeader` assigns (leader epoch, LEO) in    *)
(* the cache and keeps `leaderEpochStartOffsetOpt`;                        *)
(* `LeaderEpochFileCache.endOffsetFor` answers an epoch older than the     *)
(* cache with the first entry's start, and `assign` removes the entries a  *)
(* new one conflicts with (`truncateAndAppend`; KAFKA-7415, commit         *)
(* 18b25773b11); `Partition.maybeExpandIsr` also needs                     *)
(* `leaderEpochStartOffsetOpt.exists(fetchOffset >= _)` (KAFKA-7128,       *)
(* 7a352117c20); `Partition.makeFollower` skips a LeaderAndIsr of the      *)
(* leader the replica follows only in its own epoch or the next            *)
(* (`leaderEpoch == oldLeaderEpoch || leaderEpoch == oldLeaderEpoch + 1`;  *)
(* KAFKA-7164, 5152c80129c). Still as 2.0.0:                               *)
(* `Partition.getOutOfSyncReplicas` drops a follower that has not caught   *)
(* up within the lag time, one at the leader's LEO too, and requests carry *)
(* no leader epoch (KIP-320 came in 2.1).                                  *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'ask-      *)
(* leader'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';     *)
(* truncate_on_fetch = False; diverging_fetch_updates_leader = True;       *)
(* epoch_assign = 'truncate-conflicting'; truncate_at_end = False;         *)
(* diverging_response_hw = True; bounce_noticed = False; hw_needs_min_isr  *)
(* = False; eligible_leaders = False; isr_updates = 'zookeeper';           *)
(* isr_shrink = 'lag-time'; follower_skips = 'same-leader-next-epoch';     *)
(* isr_removal_bump = 'followers-skip'; stale_fetch = 'updates-leader'.    *)
(*                                                                         *)
(* Generated from model/protocols.py by checker/tla_modules.py: do not     *)
(* edit.                                                                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean, EpochBump,
          SkipsSameLeader, MaxDiskFailures, MaxDelays, MetadataLag

VARIABLES replicas, controller, written, crashes, committed, acked, delays, diskFailures

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- AskBeforeFetching,
    EpochCache            <- TRUE,
    AssignEpoch           <- TruncateConflicting,
    AssignOnElection      <- TruncateConflicting,
    EpochsAfterTruncate   <- CacheAfterTruncate,
    TruncationPoint       <- Kip279TruncationPoint,
    MayJoinIsr            <- JoinPastEpochStart,
    FetchDivergence       <- NoDivergence,
    TruncateOnFetch       <- FALSE,
    RecordsDivergingFetch <- TRUE,
    EpochOnElection       <- TRUE,
    TruncateAtEnd         <- FALSE,
    DivergingResponseHw   <- TRUE,
    BounceNoticed         <- FALSE,
    HwNeedsMinIsr         <- FALSE,
    EligibleLeaders       <- FALSE,
    DropsCaughtUp         <- TRUE,
    SkipsLeaderAndIsr     <- SkipsLeaderFollowedNextEpoch,
    RemembersLeader       <- TRUE,
    LiveMembersOnly       <- FALSE,
    ChecksBrokerEpochs    <- FALSE,
    FencesStaleFetches    <- FALSE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
