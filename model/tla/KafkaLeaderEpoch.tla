-------------------------- MODULE KafkaLeaderEpoch --------------------------
(***************************************************************************)
(* Variant `leader-epoch` (Kafka 0.11): truncate to the leader's end       *)
(* offset for the follower's latest epoch (KIP-101, Kafka 0.11.0 to 1.1).  *)
(*                                                                         *)
(* KIP-101, read at 0.11.0.0: `ReplicaFetcherThread.maybeTruncate` sends   *)
(* OffsetsForLeaderEpoch for the follower's latest epoch                   *)
(* (`buildLeaderEpochRequest`); the leader answers with                    *)
(* `LeaderEpochFileCache.endOffsetFor` (UNDEFINED_EPOCH_OFFSET for an      *)
(* epoch older than its first entry); the follower truncates there, or to  *)
(* its HW when the answer is undefined. An epoch enters a cache only with  *)
(* an appended record (`Log.append`): `Partition.makeLeader` does not      *)
(* touch it.                                                               *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = False; new_follower = 'ask-     *)
(* leader'; epoch_lookup = 'kip-101'; isr_join = 'leader-hw';              *)
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
    TruncationPoint       <- Kip101TruncationPoint,
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
