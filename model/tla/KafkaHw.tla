------------------------------ MODULE KafkaHw -------------------------------
(***************************************************************************)
(* Variant `hw` (Kafka 0.10): truncate to the local high watermark (Kafka  *)
(* < 0.11).                                                                *)
(*                                                                         *)
(* Kafka 0.10.2: `ReplicaManager.makeFollowers` truncates each new         *)
(* follower to its high watermark                                          *)
(* (`logManager.truncateTo(partitionsToMakeFollower ... highWatermark)`),  *)
(* those whose `Partition.makeFollower` returns true: a LeaderAndIsr       *)
(* naming the leader a replica already follows is skipped; no epoch cache. *)
(*                                                                         *)
(* epoch_cache = False; epoch_on_election = False; new_follower =          *)
(* 'truncate-to-hw'; epoch_lookup = 'none'; isr_join = 'leader-hw';        *)
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

TruncateToHw(rep) == HwBecomeFollower(rep, NoCacheAfterTruncate)

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- TruncateToHw,
    EpochCache            <- FALSE,
    AssignEpoch           <- NewerEpochOnly,
    AssignOnElection      <- AppendEntry,
    EpochsAfterTruncate   <- NoCacheAfterTruncate,
    TruncationPoint       <- NoTruncationPoint,
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
