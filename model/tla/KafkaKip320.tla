---------------------------- MODULE KafkaKip320 -----------------------------
(***************************************************************************)
(* Variant `kip-320` (Kafka 2.1): KIP-320 and KAFKA-7128: join the ISR     *)
(* only past the leader's epoch start (Kafka >= 2.1).                      *)
(*                                                                         *)
(* Kafka 2.1: `Partition.maybeExpandIsr` also needs                        *)
(* `leaderEpochStartOffsetOpt.exists(fetchOffset >= _)` (KAFKA-7128).      *)
(* KIP-320's fencing (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH) is no     *)
(* difference here: every variant fetches only from the replica acting as  *)
(* leader in the follower's own epoch.                                     *)
(*                                                                         *)
(* epoch_cache = True; new_follower = 'ask-leader'; epoch_lookup =         *)
(* 'kip-279'; isr_join = 'leader-epoch-start'; truncate_on_fetch = False;  *)
(* diverging_fetch_updates_leader = True.                                  *)
(*                                                                         *)
(* Generated from model/protocols.py by checker/tla_modules.py: do not     *)
(* edit.                                                                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean

VARIABLES replicas, controller, written, crashes, committed, acked

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- AskBeforeFetching,
    EpochsAfterAppend     <- CacheAfterAppend,
    EpochsAfterTruncate   <- CacheAfterTruncate,
    EpochsOnBecomeLeader  <- CacheOnBecomeLeader,
    TruncationPoint       <- Kip279TruncationPoint,
    MayJoinIsr            <- JoinPastEpochStart,
    FetchDivergence       <- NoDivergence,
    TruncateOnFetch       <- FALSE,
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
