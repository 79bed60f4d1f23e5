------------------------- MODULE KafkaKafka13141 ---------------------------
(***************************************************************************)
(* Variant `kafka-13141`: KAFKA-13141 (Kafka 2.7.2, 2.8.1, 3.0.0 on). As   *)
(* `diverging-epoch`, but a diverging fetch leaves the leader's view of    *)
(* the follower (its LEO, the ISR, the HW) alone.                          *)
(*                                                                         *)
(* Kafka13141Truncation in model/protocols.py.                             *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean

VARIABLES replicas, controller, written, crashes, committed, acked

(* The LeaderAndIsr naming another leader: a replica whose log has an     *)
(* epoch starts fetching at once; one with an empty cache asks first.      *)
FetchAtOnce(rep) == [rep EXCEPT !.role = IF rep.epochs = <<>> THEN "truncating" ELSE "follower"]

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- FetchAtOnce,
    EpochsAfterAppend <- CacheAfterAppend,
    EpochsAfterTruncate <- CacheAfterTruncate,
    EpochsOnBecomeLeader <- CacheOnBecomeLeader,
    TruncationPoint <- Kip279TruncationPoint,
    MayJoinIsr <- JoinPastEpochStart,
    FetchDivergence <- FetchDivergenceOffset,
    TruncateOnFetch <- TRUE,
    RecordsDivergingFetch <- FALSE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
