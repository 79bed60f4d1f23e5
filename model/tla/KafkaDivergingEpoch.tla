----------------------- MODULE KafkaDivergingEpoch -------------------------
(***************************************************************************)
(* Variant `diverging-epoch`: truncation in the fetch (leader side Kafka   *)
(* 2.7, follower side KAFKA-10554 in 2.8.0). A follower with an epoch      *)
(* fetches at once with its latest epoch; the leader answers a diverging   *)
(* fetch with no records and where the follower truncates, and still takes *)
(* the fetch offset as the follower's LEO (ISR join, HW). The follower     *)
(* sets its HW from the response and truncates.                            *)
(*                                                                         *)
(* No counterpart in Kafka's own specifications (Kip320FirstTry.tla tried  *)
(* truncation on fetch errors); DivergingEpochTruncation in                *)
(* model/protocols.py.                                                     *)
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
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
