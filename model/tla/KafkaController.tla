--------------------------- MODULE KafkaController ---------------------------
(* The TLA+ twin of kafka-mc's controller model (control/controller.py), value for value.  *)
(* Brokers race for the ephemeral /controller znode; the winner bumps /controller_epoch and *)
(* sends every broker a LeaderAndIsr in that epoch; sessions expire, and a deposed          *)
(* controller acts until it notices; brokers ignore requests of an older controller epoch  *)
(* (FenceEpochs). With AtomicEpoch FALSE the winner reads /controller_epoch in one step    *)
(* and writes it back unconditionally in another. checker/tlc_control.py runs TLC on it    *)
(* and tests/test_control_models.py holds TLC's counts and verdicts equal to kafka-mc's.    *)
EXTENDS Integers, FiniteSets

CONSTANTS Brokers, MaxExpirations, FenceEpochs, AtomicEpoch

None == -1

VARIABLES holder, zkEpoch, sessions, acting, reading, obeyed, inFlight, expirations
vars == <<holder, zkEpoch, sessions, acting, reading, obeyed, inFlight, expirations>>

Init ==
    /\ holder = None
    /\ zkEpoch = 0
    /\ sessions = Brokers
    /\ acting = [b \in Brokers |-> 0]
    /\ reading = [b \in Brokers |-> 0]
    /\ obeyed = [b \in Brokers |-> 0]
    /\ inFlight = {}
    /\ expirations = 0

\* b holds /controller_epoch = e and sends every broker a LeaderAndIsr in it
StartActing(b, e) ==
    /\ zkEpoch' = e
    /\ acting' = [acting EXCEPT ![b] = e]
    /\ reading' = [reading EXCEPT ![b] = 0]
    /\ inFlight' = inFlight \cup {<<e, b, t>> : t \in Brokers}

CanRace(b) == holder = None /\ b \in sessions /\ acting[b] = 0 /\ reading[b] = 0

BrokerWinsElection(b) ==
    /\ AtomicEpoch /\ CanRace(b)
    /\ holder' = b
    /\ StartActing(b, zkEpoch + 1)
    /\ UNCHANGED <<sessions, obeyed, expirations>>

BrokerCreatesControllerZnode(b) ==
    /\ ~AtomicEpoch /\ CanRace(b)
    /\ holder' = b
    /\ reading' = [reading EXCEPT ![b] = zkEpoch + 1]
    /\ UNCHANGED <<zkEpoch, sessions, acting, obeyed, inFlight, expirations>>

ControllerWritesEpoch(b) ==
    /\ reading[b] # 0
    /\ StartActing(b, reading[b])
    /\ UNCHANGED <<holder, sessions, obeyed, expirations>>

ControllerResign(b) ==
    /\ acting[b] # 0 /\ holder # b
    /\ acting' = [acting EXCEPT ![b] = 0]
    /\ UNCHANGED <<holder, zkEpoch, sessions, reading, obeyed, inFlight, expirations>>

ControllerSendLeaderAndIsr(b, t) ==
    /\ acting[b] # 0 /\ <<acting[b], b, t>> \notin inFlight
    /\ inFlight' = inFlight \cup {<<acting[b], b, t>>}
    /\ UNCHANGED <<holder, zkEpoch, sessions, acting, reading, obeyed, expirations>>

\* request r = <<epoch, sender, target>>
BrokerHandleLeaderAndIsr(r) ==
    /\ r \in inFlight
    /\ inFlight' = inFlight \ {r}
    /\ obeyed' = IF FenceEpochs /\ r[1] < obeyed[r[3]] THEN obeyed ELSE [obeyed EXCEPT ![r[3]] = r[1]]
    /\ UNCHANGED <<holder, zkEpoch, sessions, acting, reading, expirations>>

SessionExpire(b) ==
    /\ b \in sessions /\ expirations < MaxExpirations
    /\ sessions' = sessions \ {b}
    /\ holder' = IF holder = b THEN None ELSE holder
    /\ expirations' = expirations + 1
    /\ UNCHANGED <<zkEpoch, acting, reading, obeyed, inFlight>>

BrokerReconnect(b) ==
    /\ b \notin sessions
    /\ sessions' = sessions \cup {b}
    /\ UNCHANGED <<holder, zkEpoch, acting, reading, obeyed, inFlight, expirations>>

Next ==
    \/ \E b \in Brokers:
        \/ BrokerWinsElection(b) \/ BrokerCreatesControllerZnode(b) \/ ControllerWritesEpoch(b)
        \/ ControllerResign(b) \/ SessionExpire(b) \/ BrokerReconnect(b)
        \/ \E t \in Brokers : ControllerSendLeaderAndIsr(b, t)
    \/ \E r \in inFlight : BrokerHandleLeaderAndIsr(r)

Spec == Init /\ [][Next]_vars

\* No two brokers act, or have requests in flight, in the same controller epoch.
OneControllerPerEpoch ==
    \A e \in 1..(MaxExpirations + 1) :
        Cardinality({b \in Brokers : acting[b] = e \/ \E t \in Brokers : <<e, b, t>> \in inFlight}) <= 1

\* A request older than the newest controller epoch a broker obeyed changes nothing there.
StaleControllerIgnored ==
    [][\A r \in inFlight : (r \notin inFlight' /\ r[1] < obeyed[r[3]]) => obeyed' = obeyed]_vars
=============================================================================
