----------------------------- MODULE KafkaKRaft -----------------------------
(* The TLA+ twin of kafka-mc's KRaft controller model (control/kraft.py), value for value: *)
(* the same variables, initial state and actions, and its four safety properties (not its  *)
(* witnesses nor its goal), so that TLC explores the same state graph as kafka-mc's        *)
(* breadth-first engine. The metadata log is a sequence of                                 *)
(* records, each committed when appended; a view is the fold of a log prefix (the          *)
(* controller's: the whole log; a broker's: the prefix it replayed). Records, with offsets *)
(* counted from 0 as in kraft.py (a broker epoch is its registration's offset):            *)
(*   <<REGISTER, b>>, <<UNFENCE, b, e>>, <<FENCE, b, e>>, <<CONTROLLED_SHUTDOWN, b, e>>,   *)
(*   <<PARTITION, leader, isr, leader epoch, partition epoch>>                             *)
(* where b is a broker, e its broker epoch and isr a set of brokers (kraft.py: a bit mask). *)
(* Release: 0 for 3.2, 1 for 3.3, 2 for 3.5 (KRaftModel.release). checker/tlc.py runs TLC *)
(* on it (the .cfg from checker/tla_twins.py) and tests/test_kraft_controller.py holds     *)
(* TLC's counts and shortest violations equal to kafka-mc's.                               *)
(* Guards are written without a disjunction on the action level (TLC would take each true  *)
(* disjunct as a step of its own and count its successor twice), so that TLC generates one *)
(* successor per step kraft.py yields.                                                     *)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Brokers, MaxFailures, MaxFencings, MaxShutdowns, MaxEarlyRegistrations, Release

ASSUME Brokers = 0..(Cardinality(Brokers) - 1)
ASSUME Release \in {0, 1, 2}

None == -1
REGISTER == 0
UNFENCE == 1
FENCE == 2
CONTROLLED_SHUTDOWN == 3
PARTITION == 4
NoFetch == <<None, None, None>>

VARIABLES log, alive, epoch, replayed, shutting, reported, shutdownOffset, fetched, pending,
          failures, fencings, shutdowns, earlyRegistrations
vars == <<log, alive, epoch, replayed, shutting, reported, shutdownOffset, fetched, pending,
          failures, fencings, shutdowns, earlyRegistrations>>

Min(S) == CHOOSE x \in S : \A y \in S : x <= y

-----------------------------------------------------------------------------
(* Views: the fold of a log prefix (kraft.py `view`). A registration is a record; before  *)
(* one (kraft.py's None) its epoch is None and it counts as fenced.                        *)

NoRegistration == [epoch |-> None, fenced |-> TRUE, inShutdown |-> FALSE]
Registered(r) == r.epoch # None
Unfenced(r) == Registered(r) /\ ~r.fenced

EmptyView == [reg |-> [b \in Brokers |-> NoRegistration], leader |-> None, isr |-> {},
              leaderEpoch |-> 0, partitionEpoch |-> 0]

\* the view v after the record rec at offset
Apply(v, offset, rec) ==
    IF rec[1] = REGISTER
    THEN [v EXCEPT !.reg[rec[2]] = [epoch |-> offset, fenced |-> TRUE, inShutdown |-> FALSE]]
    ELSE IF rec[1] = PARTITION
    THEN [v EXCEPT !.leader = rec[2], !.isr = rec[3], !.leaderEpoch = rec[4], !.partitionEpoch = rec[5]]
    ELSE IF Registered(v.reg[rec[2]]) /\ v.reg[rec[2]].epoch = rec[3]
    THEN IF rec[1] = CONTROLLED_SHUTDOWN
         THEN [v EXCEPT !.reg[rec[2]].inShutdown = TRUE]
         ELSE [v EXCEPT !.reg[rec[2]].fenced = (rec[1] = FENCE)]
    ELSE v

RECURSIVE ViewOfPrefix(_, _)
\* the fold of the first k records of lg
ViewOfPrefix(lg, k) == IF k = 0 THEN EmptyView ELSE Apply(ViewOfPrefix(lg, k - 1), k - 1, lg[k])

ViewOf(lg) == ViewOfPrefix(lg, Len(lg))
BrokerView(b) == ViewOfPrefix(log, replayed[b])

\* An acceptable leader: unfenced, and from 3.3 not in controlled shutdown (`active`).
Active(K, b) == Unfenced(K.reg[b]) /\ (Release = 0 \/ ~K.reg[b].inShutdown)

\* KIP-841: may join the ISR (3.3 on; every broker in 3.2) (`eligible`).
Eligible(K, b) == Release = 0 \/ (Unfenced(K.reg[b]) /\ ~K.reg[b].inShutdown)

-----------------------------------------------------------------------------
(* The controller's records (kraft.py `partition_change`, `fence`).                      *)

\* The partition change without remove (unless that empties the ISR), the current leader kept
\* if still valid, else the first valid ISR member, else none; <<>> when nothing changes.
PartitionChange(K, remove, add) ==
    LET Acceptable(r) == r # remove /\ (r = add \/ Active(K, r))
        target == IF remove # None THEN K.isr \ {remove} ELSE K.isr
        Valid(r) == r # None /\ r \in target /\ Acceptable(r)
        candidates == {r \in Brokers : Valid(r)}
        leader == IF Valid(K.leader) THEN K.leader
                  ELSE IF candidates # {} THEN Min(candidates) ELSE None
        isr == IF target # {} THEN target ELSE K.isr
        bump == IF leader # K.leader \/ K.isr \ isr # {} THEN 1 ELSE 0
    IN IF leader = K.leader /\ isr = K.isr THEN <<>>
       ELSE << <<PARTITION, leader, isr, K.leaderEpoch + bump, K.partitionEpoch + 1>> >>

\* handleBrokerFenced: the partition change without b, then its Fence record.
FenceRecords(K, b) == PartitionChange(K, b, None) \o << <<FENCE, b, K.reg[b].epoch>> >>

\* kraft.py `_forget_offsets`: the heartbeat offsets rep, forgotten when no broker has a
\* controlled-shutdown offset in so.
ForgetOffsets(rep, so) == IF \A b \in Brokers : so[b] = None THEN [b \in Brokers |-> None] ELSE rep

\* The least offset reported by an active broker other than b (unfenced, no controlled-shutdown
\* offset), as a set: empty when there is none (kraft.py: infinite).
ActiveOffsets(K, b) ==
    {reported[x] : x \in {x \in Brokers : x # b /\ Unfenced(K.reg[x]) /\ shutdownOffset[x] = None}}

-----------------------------------------------------------------------------

Init ==
    LET n == Cardinality(Brokers)
    IN /\ log = [i \in 1..n |-> <<REGISTER, i - 1>>] \o [i \in 1..n |-> <<UNFENCE, i - 1, i - 1>>]
                \o << <<PARTITION, 0, Brokers, 0, 0>> >>
       /\ alive = [b \in Brokers |-> TRUE]
       /\ epoch = [b \in Brokers |-> b]
       /\ replayed = [b \in Brokers |-> 2 * n + 1]
       /\ shutting = [b \in Brokers |-> FALSE]
       /\ reported = [b \in Brokers |-> None]
       /\ shutdownOffset = [b \in Brokers |-> None]
       /\ fetched = [b \in Brokers |-> NoFetch]
       /\ pending = <<>>
       /\ failures = 0
       /\ fencings = 0
       /\ shutdowns = 0
       /\ earlyRegistrations = 0

\* The broker's process starts and registers: a RegisterBroker record, its offset the epoch.
BrokerStart(b) ==
    /\ ~alive[b]
    /\ ~Unfenced(ViewOf(log).reg[b])
    /\ log' = Append(log, <<REGISTER, b>>)
    /\ alive' = [alive EXCEPT ![b] = TRUE]
    /\ epoch' = [epoch EXCEPT ![b] = Len(log)]
    /\ reported' = [reported EXCEPT ![b] = None]
    /\ shutdownOffset' = [shutdownOffset EXCEPT ![b] = None]
    /\ UNCHANGED <<replayed, shutting, fetched, pending, failures, fencings, shutdowns, earlyRegistrations>>

\* A crashed broker restarts and registers after its session expired, before the controller fenced
\* it (kraft.py `BrokerStartBeforeFence`): registerBroker removes the old session, no fence follows.
BrokerStartBeforeFence(b) ==
    /\ ~alive[b]
    /\ Unfenced(ViewOf(log).reg[b])
    /\ earlyRegistrations < MaxEarlyRegistrations
    /\ log' = Append(log, <<REGISTER, b>>)
    /\ alive' = [alive EXCEPT ![b] = TRUE]
    /\ epoch' = [epoch EXCEPT ![b] = Len(log)]
    /\ LET so == [shutdownOffset EXCEPT ![b] = None]
       IN /\ shutdownOffset' = so
          /\ reported' = ForgetOffsets([reported EXCEPT ![b] = None], so)
    /\ earlyRegistrations' = earlyRegistrations + 1
    /\ UNCHANGED <<replayed, shutting, fetched, pending, failures, fencings, shutdowns>>

\* The broker replays the log to its end.
BrokerReplay(b) ==
    /\ alive[b]
    /\ replayed[b] < Len(log)
    /\ replayed' = [replayed EXCEPT ![b] = Len(log)]
    /\ UNCHANGED <<log, alive, epoch, shutting, reported, shutdownOffset, fetched, pending,
                   failures, fencings, shutdowns, earlyRegistrations>>

\* processBrokerHeartbeat (kraft.py `_heartbeat`): the records calculateNextBrokerState decides,
\* whether the broker is told to stop, its controlled-shutdown offset; then its offset remembered.
BrokerHeartbeat(b) ==
    LET K == ViewOf(log)
        r == K.reg[b]
        rep == replayed[b]
        caughtUp == rep > r.epoch
        offset == shutdownOffset[b]
        unfence == << <<UNFENCE, b, r.epoch>> >>
        shutdown == IF Release > 0 THEN << <<CONTROLLED_SHUTDOWN, b, r.epoch>> >> ELSE <<>>
        \* [records, stop, offset]
        decision ==
            IF r.fenced
            THEN IF shutting[b] THEN <<FenceRecords(K, b), TRUE, offset>>
                 ELSE IF caughtUp /\ (Release > 0 \/ rep >= Len(log))
                 THEN <<unfence \o (IF K.leader = None THEN PartitionChange(ViewOf(log \o unfence), None, b)
                                    ELSE <<>>), FALSE, offset>>
                 ELSE <<<<>>, FALSE, offset>>
            ELSE IF offset = None
            THEN IF shutting[b]
                 THEN IF K.leader = b
                      THEN LET records == shutdown \o PartitionChange(ViewOf(log \o shutdown), b, None)
                           IN <<records, FALSE, Len(log) + Len(records)>>
                      ELSE <<FenceRecords(K, b), TRUE, offset>>
                 ELSE <<<<>>, FALSE, offset>>
            ELSE IF K.leader # b /\ (ActiveOffsets(K, b) = {} \/ offset <= Min(ActiveOffsets(K, b)))
            THEN <<FenceRecords(K, b), TRUE, offset>>
            ELSE <<<<>>, FALSE, offset>>
        records == decision[1]
        stop == decision[2]
        fenced == stop \/ (r.fenced /\ records = <<>>)
        newOffsets == [shutdownOffset EXCEPT ![b] = IF fenced THEN None ELSE decision[3]]
    IN /\ alive[b]
       /\ Registered(r)
       /\ r.epoch = epoch[b]
       /\ log' = log \o records
       /\ shutdownOffset' = newOffsets
       /\ reported' = ForgetOffsets([reported EXCEPT ![b] = rep], newOffsets)
       /\ alive' = IF stop THEN [alive EXCEPT ![b] = FALSE] ELSE alive
       /\ epoch' = IF stop THEN [epoch EXCEPT ![b] = None] ELSE epoch
       /\ shutting' = IF stop THEN [shutting EXCEPT ![b] = FALSE] ELSE shutting
       /\ UNCHANGED <<replayed, fetched, pending, failures, fencings, shutdowns, earlyRegistrations>>

\* The broker wants to shut down; its heartbeats say so from now on.
BrokerBeginShutdown(b) ==
    /\ alive[b]
    /\ ~shutting[b]
    /\ shutdowns < MaxShutdowns
    /\ shutting' = [shutting EXCEPT ![b] = TRUE]
    /\ shutdowns' = shutdowns + 1
    /\ UNCHANGED <<log, alive, epoch, replayed, reported, shutdownOffset, fetched, pending,
                   failures, fencings, earlyRegistrations>>

\* The broker's process ends; what it replayed stays on disk.
BrokerCrash(b) ==
    /\ alive[b]
    /\ failures < MaxFailures
    /\ alive' = [alive EXCEPT ![b] = FALSE]
    /\ epoch' = [epoch EXCEPT ![b] = None]
    /\ shutting' = [shutting EXCEPT ![b] = FALSE]
    /\ failures' = failures + 1
    /\ UNCHANGED <<log, replayed, reported, shutdownOffset, fetched, pending, fencings, shutdowns, earlyRegistrations>>

\* The controller fences an unfenced broker whose heartbeats stopped: one that is down, or a
\* live one at most MaxFencings times.
SessionTimeout(b) ==
    LET K == ViewOf(log)
        newOffsets == [shutdownOffset EXCEPT ![b] = None]
    IN /\ Unfenced(K.reg[b])
       /\ IF alive[b] THEN fencings < MaxFencings ELSE TRUE
       /\ log' = log \o FenceRecords(K, b)
       /\ shutdownOffset' = newOffsets
       /\ reported' = ForgetOffsets([reported EXCEPT ![b] = None], newOffsets)
       /\ fencings' = IF alive[b] THEN fencings + 1 ELSE fencings
       /\ UNCHANGED <<alive, epoch, replayed, shutting, fetched, pending, failures, shutdowns, earlyRegistrations>>

\* A fetch the follower f can send now and its leader accepts and remembers for an ISR
\* expansion (kraft.py `_fetch`): to the leader of its view, in its view's leader epoch, which
\* must be the leader's own, f outside the ISR of the leader's view.
CanFetch(f) ==
    LET seen == BrokerView(f)
        leader == seen.leader
    IN /\ alive[f]
       /\ epoch[f] # None
       /\ leader \notin {None, f}
       /\ alive[leader]
       /\ BrokerView(leader).leader = leader
       /\ BrokerView(leader).leaderEpoch = seen.leaderEpoch
       /\ f \notin BrokerView(leader).isr

FetchOf(f) == <<BrokerView(f).leader, BrokerView(f).leaderEpoch, epoch[f]>>

FollowerFetch(f) ==
    /\ CanFetch(f)
    /\ FetchOf(f) # fetched[f]
    /\ fetched' = [fetched EXCEPT ![f] = FetchOf(f)]
    /\ UNCHANGED <<log, alive, epoch, replayed, shutting, reported, shutdownOffset, pending,
                   failures, fencings, shutdowns, earlyRegistrations>>

\* The AlterPartition the leader sends to add f, as its view and f's last fetch allow
\* (kraft.py `_proposal`): KIP-841 from 3.3, KIP-903 (the fetch's broker epoch is f's
\* registered one) in 3.5.
CanPropose(leader, f) ==
    LET seen == BrokerView(leader)
        r == seen.reg[f]
    IN /\ alive[leader]
       /\ leader # f
       /\ seen.leader = leader
       /\ f \notin seen.isr
       /\ fetched[f][1] = leader
       /\ fetched[f][2] = seen.leaderEpoch
       /\ IF Release = 0 THEN TRUE ELSE Unfenced(r) /\ ~r.inShutdown
       /\ IF Release = 2 THEN Registered(r) /\ r.epoch = fetched[f][3] ELSE TRUE

LeaderProposeIsr(leader, f) ==
    /\ pending = <<>>
    /\ CanPropose(leader, f)
    /\ pending' = <<leader, epoch[leader], BrokerView(leader).leaderEpoch, BrokerView(leader).partitionEpoch,
                    f, fetched[f][3]>>
    /\ UNCHANGED <<log, alive, epoch, replayed, shutting, reported, shutdownOffset, fetched,
                   failures, fencings, shutdowns, earlyRegistrations>>

\* alterPartition -> validateAlterPartitionData (kraft.py `_alter_partition`): the new ISR's
\* record, or <<>> when refused.
AlterPartitionRecords(K, request) ==
    LET leader == request[1]
        follower == request[5]
        sender == K.reg[leader]
        r == K.reg[follower]
    IN IF ~Registered(sender) \/ sender.epoch # request[2] THEN <<>>  \* STALE_BROKER_EPOCH
       ELSE IF <<K.leader, K.leaderEpoch, K.partitionEpoch>> # <<leader, request[3], request[4]>> THEN <<>>
       ELSE IF ~Eligible(K, follower) THEN <<>>  \* INELIGIBLE_REPLICA (KIP-841)
       ELSE IF Release = 2 /\ (~Registered(r) \/ r.epoch # request[6]) THEN <<>>  \* KIP-903
       ELSE << <<PARTITION, leader, K.isr \cup {follower}, request[3], request[4] + 1>> >>

ControllerHandleAlterPartition ==
    /\ pending # <<>>
    /\ log' = log \o AlterPartitionRecords(ViewOf(log), pending)
    /\ pending' = <<>>
    /\ UNCHANGED <<alive, epoch, replayed, shutting, reported, shutdownOffset, fetched,
                   failures, fencings, shutdowns, earlyRegistrations>>

Next ==
    \/ \E b \in Brokers :
        \/ BrokerStart(b) \/ BrokerStartBeforeFence(b) \/ BrokerReplay(b) \/ BrokerHeartbeat(b) \/ BrokerBeginShutdown(b)
        \/ BrokerCrash(b) \/ SessionTimeout(b) \/ FollowerFetch(b)
        \/ \E f \in Brokers : LeaderProposeIsr(b, f)
    \/ ControllerHandleAlterPartition

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Properties, under kafka-mc's names.                                                   *)

\* KIP-841: an ISR of two or more holds only registered, unfenced brokers that are not in
\* controlled shutdown (the controller's view and memory).
IsrMembersEligible ==
    LET K == ViewOf(log)
    IN Cardinality(K.isr) < 2
       \/ \A b \in K.isr : Unfenced(K.reg[b]) /\ ~K.reg[b].inShutdown /\ shutdownOffset[b] = None

\* The partition's leader, if any, is registered, unfenced and not in controlled shutdown.
LeaderIsActive ==
    LET K == ViewOf(log)
    IN K.leader = None
       \/ (Unfenced(K.reg[K.leader]) /\ ~K.reg[K.leader].inShutdown /\ shutdownOffset[K.leader] = None)

\* KIP-903: a broker joins the ISR only in the incarnation whose fetch the leader saw. The step
\* that takes an AlterPartition and appends its record is the one that empties pending and grows
\* the log (no other action changes a pending request).
IsrJoinedByRegisteredIncarnation ==
    [][(pending # <<>> /\ pending' = <<>> /\ Len(log') > Len(log))
        => LET r == ViewOf(log).reg[pending[5]] IN Registered(r) /\ r.epoch = pending[6]]_vars

\* A broker leaves controlled shutdown only when no live active broker's view names it leader.
\* A heartbeat lets b go when b had a controlled-shutdown offset, was alive and is not after the
\* step, which no crash took (a crash counts a failure).
ShutdownAfterLeadershipMoved ==
    [][\A b \in Brokers :
         (shutdownOffset[b] # None /\ alive[b] /\ ~alive'[b] /\ failures' = failures)
            => \A other \in Brokers \ {b} :
                   (alive[other] /\ Unfenced(ViewOf(log).reg[other]) /\ shutdownOffset[other] = None)
                       => BrokerView(other).leader # b]_vars
=============================================================================
