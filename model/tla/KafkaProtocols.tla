--------------------------- MODULE KafkaProtocols ---------------------------
(***************************************************************************)
(* The operators the truncation protocols are made of, as model/          *)
(* protocols.py: a variant module picks its own and passes them to        *)
(* KafkaReplication. Pure operators on values, no variables.               *)
(***************************************************************************)
EXTENDS Integers, Sequences

Unknown == -1           \* an epoch or offset a replica does not know

MinOf(S) == CHOOSE x \in S : \A y \in S : x <= y
Lesser(a, b) == IF a <= b THEN a ELSE b
Greater(a, b) == IF a >= b THEN a ELSE b

LatestEpoch(epochs) == IF epochs = <<>> THEN Unknown ELSE epochs[Len(epochs)][1]

----------------------------------------------------------------------------
(* The LeaderAndIsr naming another leader (the choice new_follower).       *)
(* truncate-to-hw: cut the log at the local HW (and the cache with it, by  *)
(* the variant's AfterTruncate) and fetch. ask-leader: keep the log and    *)
(* wait for the leader's answer to OffsetsForLeaderEpoch ("truncating" is  *)
(* KafkaReplication's Truncating). fetch-if-epoch: a replica whose log has *)
(* an epoch fetches at once; one with an empty cache asks first.           *)
HwBecomeFollower(rep, AfterTruncate(_, _)) ==
    [rep EXCEPT !.log = IF rep.hw < Len(@) THEN SubSeq(@, 1, rep.hw) ELSE @,
                !.epochs = IF rep.hw < Len(rep.log) THEN AfterTruncate(@, rep.hw) ELSE @,
                !.role = "follower"]

AskBeforeFetching(rep) == [rep EXCEPT !.role = "truncating"]

FetchAtOnce(rep) == [rep EXCEPT !.role = IF rep.epochs = <<>> THEN "truncating" ELSE "follower"]

----------------------------------------------------------------------------
(* Partition.makeFollower returning false (the choice follower_skips,      *)
(* Protocol.skips_leader_and_isr): whether replica rep, acting on a        *)
(* LeaderAndIsr naming leader in a newer epoch, only takes the epoch.      *)
(* same-leader (0.10.2.0 to 2.0.0): it names the leader rep follows        *)
(* (leaderReplicaIdOpt.get == newLeaderBrokerId). same-leader-next-epoch   *)
(* (2.0.1, KAFKA-7164): and the epoch is the one after rep's. same-epoch   *)
(* (2.1.0 on): only a LeaderAndIsr of rep's own epoch, never a newer one.  *)
SkipsLeaderFollowed(rep, leader, epoch) == rep.leaderId = leader

SkipsLeaderFollowedNextEpoch(rep, leader, epoch) == rep.leaderId = leader /\ epoch = rep.epoch + 1

SkipsOwnEpochOnly(rep, leader, epoch) == FALSE

----------------------------------------------------------------------------
(* LeaderEpochFileCache.assign(epoch, start), the choice epoch_assign.    *)
(* newer-epoch-only (0.11.0 to 2.0.0): an entry opens only for an epoch    *)
(* newer than the latest; a new leader's entry (KAFKA-7415 without its     *)
(* assign) is appended as it is (AppendEntry). truncate-conflicting        *)
(* (2.0.1 on): nothing when the latest entry has the epoch and starts at   *)
(* or below; else drop every entry not below the new one in epoch and      *)
(* start, and append it.                                                   *)
NewerEpochOnly(epochs, epoch, start) ==
    IF epochs = <<>> \/ epoch > LatestEpoch(epochs) THEN Append(epochs, <<epoch, start>>) ELSE epochs

AppendEntry(epochs, epoch, start) == Append(epochs, <<epoch, start>>)

TruncateConflicting(epochs, epoch, start) ==
    IF epochs # <<>> /\ epoch = LatestEpoch(epochs) /\ start >= epochs[Len(epochs)][2] THEN epochs
    ELSE Append(SelectSeq(epochs, LAMBDA entry : entry[1] < epoch /\ entry[2] < start), <<epoch, start>>)

(* Cutting the log drops the cache entries that start at or after the cut  *)
(* (none without a cache, hw).                                             *)
NoCacheAfterTruncate(epochs, offset) == epochs

CacheAfterTruncate(epochs, offset) == SelectSeq(epochs, LAMBDA entry : entry[2] < offset)

----------------------------------------------------------------------------
(* Kafka 0.11's LeaderEpochFileCache.endOffsetFor: the LEO for the latest  *)
(* epoch; otherwise the start of the first later cached epoch; Unknown     *)
(* (UNDEFINED_EPOCH_OFFSET) for an undefined epoch or one older than every *)
(* cached epoch, except under KAFKA-7415 (onElection): the first start.    *)
EndOffsetFor(epochs, leo, requested, onElection) ==
    LET later == {i \in 1 .. Len(epochs) : epochs[i][1] > requested}
    IN  IF requested = Unknown \/ epochs = <<>> THEN Unknown
        ELSE IF requested = epochs[Len(epochs)][1] THEN leo
        ELSE IF requested < epochs[1][1] /\ ~onElection THEN Unknown
        ELSE IF later = {} THEN Unknown
        ELSE epochs[MinOf(later)][2]

(* endOffsetFor since KIP-279: <<the largest cached epoch at or below the  *)
(* requested one, where it ends>>, or <<Unknown, Unknown>>; for an epoch   *)
(* older than the cache <<the requested one, the first start>> under       *)
(* KAFKA-7415 (onElection), <<Unknown, Unknown>> before it.                *)
EpochEnd(epochs, leo, requested, onElection) ==
    LET later == {i \in 1 .. Len(epochs) : epochs[i][1] > requested}
        earlier == {i \in 1 .. Len(epochs) : epochs[i][1] <= requested}
    IN  IF requested = Unknown \/ epochs = <<>> THEN <<Unknown, Unknown>>
        ELSE IF requested = epochs[Len(epochs)][1] THEN <<requested, leo>>
        ELSE IF later = {} THEN <<Unknown, Unknown>>
        ELSE IF earlier = {} /\ ~onElection THEN <<Unknown, Unknown>>
        ELSE <<IF earlier = {} THEN requested ELSE epochs[CHOOSE i \in earlier : \A j \in earlier : j <= i][1],
               epochs[MinOf(later)][2]>>

(* AbstractFetcherThread.getOffsetTruncationState (Kafka 2.0 on), given    *)
(* the leader's <<epoch, end>>: <<offset to truncate to, complete>>.       *)
OffsetTruncationState(leaderEpoch, leaderEnd, f, onElection) ==
    LET own == EpochEnd(f.epochs, Len(f.log), leaderEpoch, onElection)
    IN  IF leaderEnd = Unknown THEN <<f.hw, TRUE>>
        ELSE IF own[2] = Unknown THEN <<leaderEnd, TRUE>>
        ELSE IF own[1] # leaderEpoch THEN <<own[2], FALSE>>
        ELSE <<Lesser(own[2], leaderEnd), TRUE>>

(* The OffsetsForLeaderEpoch exchange: <<offset, complete>>.               *)
Kip101TruncationPoint(leader, f, onElection) ==
    LET endOffset == EndOffsetFor(leader.epochs, Len(leader.log), LatestEpoch(f.epochs), onElection)
    IN  <<IF endOffset = Unknown THEN f.hw ELSE endOffset, TRUE>>

Kip279TruncationPoint(leader, f, onElection) ==
    LET answer == EpochEnd(leader.epochs, Len(leader.log), LatestEpoch(f.epochs), onElection)
    IN  OffsetTruncationState(answer[1], answer[2], f, onElection)

NoTruncationPoint(leader, f, onElection) == <<f.hw, TRUE>>   \* hw: no exchange happens

----------------------------------------------------------------------------
(* Partition.maybeExpandIsr: before 2.1 a follower joins the ISR once its  *)
(* fetch offset reaches the leader's HW; from 2.1 (KAFKA-7128) also the    *)
(* start offset of the leader's epoch.                                     *)
JoinAtHw(leader, offset) == offset >= leader.hw

JoinPastEpochStart(leader, offset) ==
    /\ offset >= leader.hw
    /\ leader.epochs # <<>>
    /\ offset >= leader.epochs[Len(leader.epochs)][2]

(* Partition.readRecords with lastFetchedEpoch (2.7 on): the offset the    *)
(* follower truncates to when its log diverges from the leader's, else     *)
(* Unknown.                                                                *)
NoDivergence(leader, f, onElection) == Unknown

FetchDivergenceOffset(leader, f, onElection) ==
    LET fetchEpoch == LatestEpoch(f.epochs)
        answer == EpochEnd(leader.epochs, Len(leader.log), fetchEpoch, onElection)
    IN  IF fetchEpoch = Unknown \/ answer[2] = Unknown THEN Unknown
        ELSE IF answer[1] < fetchEpoch \/ answer[2] < Len(f.log)
        THEN OffsetTruncationState(answer[1], answer[2], f, onElection)[1]
        ELSE Unknown

=============================================================================
