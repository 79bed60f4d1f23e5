---------------------------- MODULE KafkaKip320 -----------------------------
(***************************************************************************)
(* Variant `kip-320` (Kafka 2.1.0): KAFKA-7152: a caught-up follower stays *)
(* in the ISR; a follower truncates at every new epoch (Kafka 2.1 with     *)
(* KIP-320).                                                               *)
(*                                                                         *)
(* As `kafka-7415` (KAFKA-7415, KAFKA-7128), read at 2.1.0. KIP-320's      *)
(* fencing in 2.1 (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH) is no        *)
(* difference here: every variant fetches only from the replica acting as  *)
(* leader in the follower's own epoch. KAFKA-7152 (2.1.0):                 *)
(* `Partition.getOutOfSyncReplicas` keeps a follower at the leader's LEO.  *)
(* `Partition.makeFollower` skips only a LeaderAndIsr of the replica's own *)
(* epoch (2.1.0).                                                          *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'ask-      *)
(* leader'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';     *)
(* truncate_on_fetch = False; diverging_fetch_updates_leader = True;       *)
(* epoch_assign = 'truncate-conflicting'; truncate_at_end = False;         *)
(* diverging_response_hw = True; bounce_noticed = False; hw_needs_min_isr  *)
(* = False; eligible_leaders = False; isr_updates = 'zookeeper';           *)
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
    DropsCaughtUp         <- FALSE,
    SkipsLeaderAndIsr     <- SkipsOwnEpochOnly,
    RemembersLeader       <- FALSE,
    LiveMembersOnly       <- FALSE,
    ChecksBrokerEpochs    <- FALSE,
    FencesStaleFetches    <- FALSE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
