# shellcheck shell=bash
# slurm_harness.sh: start/stop a throw-away single-node Slurm cluster for e2e.slurm
# (munged + slurmctld + slurmd) entirely inside one directory.
#
# Usage (source it, do not execute it):
#     source slurm-harness.sh
#     dir=$(mktemp -d)
#     slurm_start "$dir" || exit 1      # exports SLURM_CONF=$dir/slurm.conf
#     sbatch ... ; squeue ... ; scancel ...
#     slurm_stop "$dir"
#
# Needs: Debian packages slurmctld slurmd slurm-client munge (22.05, bookworm),
# run as root (SlurmUser=root / SlurmdUser=root). No system service is used:
# the system munged socket, /etc/slurm and /etc/munge are never touched.
#
# Tunables (environment, all optional):
#   SLURM_HARNESS_PORT      first port tried for slurmctld (default 16817);
#                           slurmd uses the next one. If the pair is taken the
#                           next free pair (step 2, up to 100 tries) is used.
#   SLURM_HARNESS_TIMEOUT   seconds to wait for the node to become idle (60)
#   SLURM_HARNESS_STOP_TIMEOUT  seconds to wait per daemon on stop (15)
#   SLURM_HARNESS_REALMEM   RealMemory of the node in MB (1000)
#   SLURM_HARNESS_DEBUG     SlurmctldDebug/SlurmdDebug level (info)
#   SLURM_HARNESS_SCHED_PARAMS  SchedulerParameters (batch_sched_delay=0)
#
# Also provided: slurm_job_state JOBID   -> "ID STATE REASON" lines (scontrol)
#                slurm_wait_job JOBID [S] -> wait until all records are final
# After slurm_start: $SLURM_HARNESS_START_MS; after slurm_stop: $SLURM_HARNESS_STOP_MS.
#
# Every daemon is started with SLURM_HARNESS_DIR=<dir> in its environment.
# slurmstepd processes inherit slurmd's environment, so the marker lets
# slurm_stop find *our* slurmstepds (and their job processes) without
# matching anything by name.

_slurm_log() { printf '[slurm-harness %(%T)T] %s\n' -1 "$*" >&2; }

# True if something is LISTENing on TCP port $1 (IPv4 or IPv6).
_slurm_port_in_use() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
                      END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

_slurm_pick_ports() {   # prints "ctldport slurmdport"
    local p=${SLURM_HARNESS_PORT:-16817} i
    for ((i = 0; i < 100; i++, p += 2)); do
        if ! _slurm_port_in_use "$p" && ! _slurm_port_in_use $((p + 1)); then
            echo "$p $((p + 1))"
            return 0
        fi
    done
    return 1
}

# Is PID $1 alive and still the process we started (marker for dir $2)?
# (A zombie has an empty /proc/PID/environ, so it does not count.)
_slurm_pid_is_ours() {
    [[ -n $1 ]] && grep -qzxF "SLURM_HARNESS_DIR=$2" "/proc/$1/environ" 2>/dev/null
}

# PIDs of all live processes carrying our marker (one grep, no fork per PID).
_slurm_marked_pids() {
    grep -lzxF "SLURM_HARNESS_DIR=$1" /proc/[0-9]*/environ 2>/dev/null |
        sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | grep -vxF -e "$$" -e "$BASHPID"
}

# Our slurmstepd processes (marked + comm == slurmstepd).
_slurm_stepd_pids() {
    local pid comm
    for pid in $(_slurm_marked_pids "$1"); do
        read -r comm 2>/dev/null <"/proc/$pid/comm" || continue
        [[ $comm == slurmstepd ]] && echo "$pid"
    done
}

# All descendants of the given PIDs (walks the ppid tree once per level).
_slurm_descendants() {
    local -a todo=("$@") next=()
    local pid ppid line p
    while ((${#todo[@]})); do
        next=()
        for line in $(ps -e -o pid=,ppid= | awk '{print $1":"$2}'); do
            pid=${line%%:*} ppid=${line##*:}
            for p in "${todo[@]}"; do
                if [[ $ppid == "$p" ]]; then echo "$pid"; next+=("$pid"); fi
            done
        done
        todo=("${next[@]}")
    done
}

_slurm_dump_logs() {
    local dir=$1 f
    for f in "$dir"/log/*; do
        [[ -f $f ]] || continue
        echo "======== $f (last 40 lines) ========" >&2
        tail -n 40 "$f" >&2
    done
}

# Wait up to $2 seconds for PID $1 (ours, dir $3) to disappear.
_slurm_wait_gone() {
    local pid=$1 t=$2 dir=$3 i
    for ((i = 0; i < t * 10; i++)); do
        _slurm_pid_is_ours "$pid" "$dir" || return 0
        sleep 0.1
    done
    return 1
}

slurm_start() {
    local dir=${1:?usage: slurm_start DIR}
    local start_ns
    start_ns=$(date +%s%N)
    mkdir -p "$dir" || return 1
    dir=$(cd "$dir" && pwd -P) || return 1
    if [[ $(id -u) != 0 ]]; then
        _slurm_log "must run as root (SlurmUser=root, SlurmdUser=root)"
        return 1
    fi
    if [[ -s $dir/pids ]]; then
        _slurm_log "$dir/pids exists: a cluster may already run there; call slurm_stop first"
        return 1
    fi
    # munged insists that every directory on the way to its socket is
    # world-executable; mktemp -d creates 0700 directories.
    chmod 0755 "$dir" || return 1
    mkdir -p "$dir"/{munge,log,run,spool/ctld,spool/slurmd,tmp} || return 1
    chmod 0755 "$dir/munge"
    : >"$dir/pids"

    local host cpus sockets cores threads boards realmem ports ctldport dport
    host=$(hostname -s)
    # Let slurmd tell us the real topology; a node defined with more CPUs
    # than it has gets drained ("Low socket*core*thread count").
    local hw
    hw=$(slurmd -C 2>/dev/null | head -n1) || true
    _kv() { sed -n "s/.*\<$1=\([^ ]*\).*/\1/p" <<<"$hw"; }
    cpus=$(_kv CPUs); boards=$(_kv Boards); sockets=$(_kv SocketsPerBoard)
    cores=$(_kv CoresPerSocket); threads=$(_kv ThreadsPerCore)
    realmem=$(_kv RealMemory)
    unset -f _kv
    [[ -n $cpus ]] || cpus=$(nproc)
    local want_mem=${SLURM_HARNESS_REALMEM:-1000}
    if [[ -n $realmem ]] && ((realmem < want_mem)); then want_mem=$realmem; fi
    local topo="CPUs=$cpus"
    if [[ -n $sockets && -n $cores && -n $threads ]]; then
        topo+=" Boards=${boards:-1} SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads"
    fi

    ports=$(_slurm_pick_ports) || { _slurm_log "no free port pair found"; return 1; }
    read -r ctldport dport <<<"$ports"

    # ---------------------------------------------------------------- munge
    local sock=$dir/munge/munge.socket
    if ((${#sock} > 100)); then
        _slurm_log "munge socket path too long for AF_UNIX (${#sock} chars): $sock"
        return 1
    fi
    mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
        { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none &&
          chmod 0400 "$dir/munge/munge.key"; } || return 1
    # -F: stay in the foreground, so $! is munged's real PID. In -F mode munged
    # logs to stderr (it writes --log-file/--pid-file only when daemonizing),
    # hence the redirection.
    SLURM_HARNESS_DIR=$dir munged -F \
        --socket="$sock" \
        --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/run/munged.pid" \
        --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed" \
        </dev/null >>"$dir/log/munged.log" 2>&1 &
    echo "munged $!" >>"$dir/pids"
    local i ok=
    for ((i = 0; i < 100; i++)); do
        if munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then ok=1; break; fi
        sleep 0.1
    done
    if [[ -z $ok ]]; then
        _slurm_log "munged did not come up"
        _slurm_dump_logs "$dir"; slurm_stop "$dir"; return 1
    fi

    # ----------------------------------------------------------- slurm.conf
    : >"$dir/plugstack.conf"   # isolate from /etc/slurm/plugstack.conf(.d)
    cat >"$dir/slurm.conf" <<EOF
# generated by slurm-harness.sh
ClusterName=harness
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctldport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/slurmd
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=${SLURM_HARNESS_DEBUG:-info}
SlurmdDebug=${SLURM_HARNESS_DEBUG:-info}
TmpFS=$dir/tmp
PlugStackConfig=$dir/plugstack.conf
MailProg=/bin/true
# no cgroups anywhere
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# default batch_sched_delay=3 makes every batch job wait for a 3 s tick
SchedulerParameters=${SLURM_HARNESS_SCHED_PARAMS:-batch_sched_delay=0}
ReturnToService=2
# keep finished jobs visible in squeue/scontrol (no accounting -> no sacct)
MinJobAge=600
MaxArraySize=100001
MaxJobCount=200000
KillWait=2
InactiveLimit=0
Waittime=0
SlurmdTimeout=300
SlurmctldTimeout=120
NodeName=$host NodeAddr=127.0.0.1 $topo RealMemory=$want_mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    export SLURM_CONF=$dir/slurm.conf

    # --------------------------------------------------------------- daemons
    SLURM_HARNESS_DIR=$dir SLURM_CONF=$dir/slurm.conf \
        slurmctld -D -i -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
    echo "slurmctld $!" >>"$dir/pids"
    SLURM_HARNESS_DIR=$dir SLURM_CONF=$dir/slurm.conf \
        slurmd -D -N "$host" -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmd.out" 2>&1 &
    echo "slurmd $!" >>"$dir/pids"

    local timeout=${SLURM_HARNESS_TIMEOUT:-60} state='' name pid
    for ((i = 0; i < timeout * 5; i++)); do
        while read -r name pid; do
            # A pid still alive but not yet marked is the forked shell before its exec (the
            # marker is set at exec): not dead, only slow on a busy machine.
            if ! _slurm_pid_is_ours "$pid" "$dir" && ! { ((i < 25)) && kill -0 "$pid" 2>/dev/null; }; then
                _slurm_log "$name (pid $pid) died during startup"
                _slurm_dump_logs "$dir"; slurm_stop "$dir"; return 1
            fi
        done <"$dir/pids"
        state=$(sinfo -h -N -n "$host" -o %T 2>/dev/null | head -n1) || true
        [[ $state == idle ]] && break
        # e.g. "inval"/"drain": wrong CPUs/topology, RealMemory too big, ...
        [[ $state == *inval* || $state == *drain* ]] && break
        sleep 0.2
    done
    if [[ $state != idle ]]; then
        _slurm_log "node $host not idle after ${timeout}s (state: '${state:-no answer}')"
        scontrol show node "$host" >&2 2>/dev/null
        _slurm_dump_logs "$dir"; slurm_stop "$dir"; return 1
    fi
    SLURM_HARNESS_START_MS=$((($(date +%s%N) - start_ns) / 1000000))
    _slurm_log "cluster up in $dir (node $host idle, ports $ctldport/$dport, ${SLURM_HARNESS_START_MS} ms)"
    return 0
}

slurm_stop() {
    local dir=${1:?usage: slurm_stop DIR}
    [[ -d $dir ]] || { _slurm_log "no such dir $dir"; return 1; }
    dir=$(cd "$dir" && pwd -P) || return 1
    local stop_t=${SLURM_HARNESS_STOP_TIMEOUT:-15} name pid rc=0 i
    local start_ns
    start_ns=$(date +%s%N)
    local -A pids=()
    if [[ -f $dir/pids ]]; then
        while read -r name pid; do pids[$name]=$pid; done <"$dir/pids"
    fi

    # 1. Politely cancel jobs while the controller still runs, so that
    #    slurmstepd can clean up its own job processes.
    if _slurm_pid_is_ours "${pids[slurmctld]:-}" "$dir"; then
        local jobs
        # %F = array job id (== job id for non-array jobs); cancelling it
        # cancels all of its tasks. Cancelling task job ids directly fails
        # with "Invalid job id" once the parent has been cancelled.
        jobs=$(SLURM_CONF=$dir/slurm.conf squeue -h -t PD,R,CG,S,CF -o %F 2>/dev/null | sort -u) || true
        if [[ -n $jobs ]]; then
            # shellcheck disable=SC2086
            SLURM_CONF=$dir/slurm.conf scancel $jobs 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do      # <= 10 s for steps to go away
                [[ -z $(_slurm_stepd_pids "$dir") ]] && break
                sleep 0.1
            done
        fi
    fi

    # 2. Stop the daemons we started, by PID: slurmd, slurmctld, munged.
    for name in slurmd slurmctld munged; do
        pid=${pids[$name]:-}
        [[ -n $pid ]] || continue
        _slurm_pid_is_ours "$pid" "$dir" || continue
        kill -TERM "$pid" 2>/dev/null || true
        if ! _slurm_wait_gone "$pid" "$stop_t" "$dir"; then
            _slurm_log "$name (pid $pid) ignored SIGTERM for ${stop_t}s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            _slurm_wait_gone "$pid" 5 "$dir" || { _slurm_log "$name (pid $pid) survived SIGKILL"; rc=1; }
        fi
        # reap it if it is our child (avoids zombies / job-control noise)
        wait "$pid" 2>/dev/null || true
    done

    # 3. Anything else that still carries our marker is a slurmstepd (or a
    #    stray helper) of this cluster: kill it and its whole process tree,
    #    including the process groups created by proctrack/pgid.
    local -a left=() desc=()
    mapfile -t left < <(_slurm_marked_pids "$dir")
    if ((${#left[@]})); then
        _slurm_log "killing leftover processes of this cluster: ${left[*]}"
        mapfile -t desc < <(_slurm_descendants "${left[@]}")
        local pg
        for pid in "${left[@]}" "${desc[@]}"; do
            pg=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ') || true
            kill -STOP "$pid" 2>/dev/null || true
            # only kill a process group led by one of these processes
            if [[ -n $pg && $pg == "$pid" ]]; then kill -KILL -- "-$pg" 2>/dev/null || true; fi
            kill -KILL "$pid" 2>/dev/null || true
        done
        sleep 0.2
        mapfile -t left < <(_slurm_marked_pids "$dir")
        if ((${#left[@]})); then _slurm_log "still alive: ${left[*]}"; rc=1; fi
    fi

    rm -f "$dir/pids"
    if [[ ${SLURM_CONF:-} == "$dir/slurm.conf" ]]; then unset SLURM_CONF; fi
    SLURM_HARNESS_STOP_MS=$((($(date +%s%N) - start_ns) / 1000000))
    _slurm_log "cluster in $dir stopped (${SLURM_HARNESS_STOP_MS} ms, rc=$rc)"
    return $rc
}

# Print "ID STATE REASON" for a job, one line per array task / job record.
# ID is ARRAYJOBID_TASKID for array tasks (or ARRAYJOBID_[range] for the
# still-pending rest of an array), else JOBID. Works without accounting as
# long as the job finished less than MinJobAge seconds ago.
slurm_job_state() {
    scontrol -o show job "$1" 2>/dev/null | awk '{
        delete f
        for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); if (!(k in f)) f[k] = v }
        id = ("ArrayJobId" in f) ? f["ArrayJobId"] "_" f["ArrayTaskId"] : f["JobId"]
        print id, f["JobState"], f["Reason"]
    }'
}

# Wait (bounded) until no record of job $1 is in a non-final state.
# Usage: slurm_wait_job JOBID [TIMEOUT_S]. Returns 0 when finished, 1 on timeout.
slurm_wait_job() {
    local id=$1 t=${2:-120} i
    for ((i = 0; i < t * 5; i++)); do
        if ! slurm_job_state "$id" | awk '$2 ~ /^(PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|RESIZING|SIGNALING|STAGE_OUT|RESV_DEL_HOLD)$/ { f = 1 } END { exit !f }'; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}
