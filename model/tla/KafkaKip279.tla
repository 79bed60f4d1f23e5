---------------------------- MODULE KafkaKip279 -----------------------------
(***************************************************************************)
(* Variant `kip-279` (Kafka 2.0): KIP-279: agree on the largest common     *)
(* epoch, truncate to its end (Kafka >= 2.0).                              *)
(*                                                                         *)
(* KIP-279 (KAFKA-6361, Kafka 2.0): `LeaderEpochFileCache.endOffsetFor`    *)
(* answers the largest epoch at or below the requested one and its end;    *)
(* `AbstractFetcherThread.getOffsetTruncationState` truncates to the end   *)
(* of that epoch in the follower's log and asks again while the epochs     *)
(* differ.                                                                 *)
(*                                                                         *)
(* epoch_cache = True; new_follower = 'ask-leader'; epoch_lookup =         *)
(* 'kip-279'; isr_join = 'leader-hw'; truncate_on_fetch = False;           *)
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
    MayJoinIsr            <- JoinAtHw,
    FetchDivergence       <- NoDivergence,
    TruncateOnFetch       <- FALSE,
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
