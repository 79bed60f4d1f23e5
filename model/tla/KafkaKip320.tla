--------------------------- MODULE KafkaKip320 -----------------------------
(***************************************************************************)
(* Variant `kip-320`: KIP-320 and KAFKA-7128, Kafka 2.1. KIP-279's         *)
(* truncation, and a follower joins the ISR only once its fetch offset has *)
(* reached both the leader's HW and the start offset of the leader's       *)
(* epoch. KIP-320's epoch fencing is in the base module for every variant: *)
(* a follower fetches and asks only in the epoch its leader leads.         *)
(*                                                                         *)
(* The counterpart of Kip320.tla in Kafka's own specifications, and of     *)
(* Kip320Truncation in model/protocols.py.                                 *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean

VARIABLES replicas, controller, written, crashes, committed, acked

(* The LeaderAndIsr naming another leader: keep the log and wait for the   *)
(* leader's answer to OffsetsForLeaderEpoch ("truncating" is               *)
(* KafkaReplication's Truncating).                                         *)
AskBeforeFetching(rep) == [rep EXCEPT !.role = "truncating"]

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- AskBeforeFetching,
    EpochsAfterAppend <- CacheAfterAppend,
    EpochsAfterTruncate <- CacheAfterTruncate,
    EpochsOnBecomeLeader <- CacheOnBecomeLeader,
    TruncationPoint <- Kip279TruncationPoint,
    MayJoinIsr <- JoinPastEpochStart,
    FetchDivergence <- NoDivergence,
    TruncateOnFetch <- FALSE,
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
