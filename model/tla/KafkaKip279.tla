---------------------------- MODULE KafkaKip279 -----------------------------
(***************************************************************************)
(* Variant `kip-279` (Kafka 2.0.0): KIP-279: agree on the largest common   *)
(* epoch, truncate to its end (Kafka 2.0.0).                               *)
(*                                                                         *)
(* KIP-279 (KAFKA-6361), read at 2.0.0:                                    *)
(* `LeaderEpochFileCache.endOffsetFor` answers the largest epoch at or     *)
(* below the requested one and its end, (UNDEFINED_EPOCH,                  *)
(* UNDEFINED_EPOCH_OFFSET) for one older than the first entry;             *)
(* `AbstractFetcherThread.getOffsetTruncationState` truncates to the end   *)
(* of that epoch in the follower's log and asks again while the epochs     *)
(* differ. `Partition.makeLeader` still leaves the cache alone (KAFKA-7415 *)
(* came in 2.0.1).                                                         *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = False; new_follower = 'ask-     *)
(* leader'; epoch_lookup = 'kip-279'; isr_join = 'leader-hw';              *)
(* truncate_on_fetch = False; diverging_fetch_updates_leader = True;       *)
(* epoch_assign = 'newer-epoch-only'; truncate_at_end = False;             *)
(* diverging_response_hw = True; bounce_noticed = False; hw_needs_min_isr  *)
(* = False; eligible_leaders = False; isr_updates = 'zookeeper';           *)
(* isr_shrink = 'lag-time'; follower_skips = 'same-leader';                *)
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
    AssignEpoch           <- NewerEpochOnly,
    AssignOnElection      <- AppendEntry,
    EpochsAfterTruncate   <- CacheAfterTruncate,
    TruncationPoint       <- Kip279TruncationPoint,
    MayJoinIsr            <- JoinAtHw,
    FetchDivergence       <- NoDivergence,
    TruncateOnFetch       <- FALSE,
    RecordsDivergingFetch <- TRUE,
    EpochOnElection       <- FALSE,
    TruncateAtEnd         <- FALSE,
    DivergingResponseHw   <- TRUE,
    BounceNoticed         <- FALSE,
    HwNeedsMinIsr         <- FALSE,
    EligibleLeaders       <- FALSE,
    DropsCaughtUp         <- TRUE,
    SkipsLeaderAndIsr     <- SkipsLeaderFollowed,
    RemembersLeader       <- TRUE,
    LiveMembersOnly       <- FALSE,
    ChecksBrokerEpochs    <- FALSE,
    FencesStaleFetches    <- FALSE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
