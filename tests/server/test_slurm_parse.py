"""Reading Slurm's own output: `scontrol -o show node` records (this one as Slurm 22.05.8 printed it here),
GRES strings as slurm.conf writes them (https://slurm.schedmd.com/gres.html), node states and exit codes."""

from treino.server.slurm import _epoch, _exit_code, gres_gpus, node_usable, parse_record

NODE = (
    "NodeName=vm Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.45 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:2 NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8 "
    "OS=Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 FreeMem=22518 Sockets=2 "
    "State=IDLE ThreadsPerCore=1 Partitions=gpu-sp1,gpu-mia  BootTime=2026-12-01T08:33:38 "
    "Reason=maintenance [root@2026]"
)


def test_a_node_record_with_spaces_inside_values() -> None:
    rec = parse_record(NODE)
    assert rec["NodeName"] == "vm" and rec["NodeAddr"] == "127.0.0.1" and rec["Gres"] == "gpu:2"
    assert rec["OS"] == "Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0"
    assert rec["Partitions"] == "gpu-sp1,gpu-mia" and rec["Reason"] == "maintenance [root@2026]"


def test_gres_counts_and_types() -> None:
    assert gres_gpus("gpu:2") == (2, "")
    assert gres_gpus("gpu:h100:8(S:0-1)") == (8, "h100")
    assert gres_gpus("gpu:a100:4,shard:8") == (4, "a100")
    assert gres_gpus("(null)") == (0, "")


def test_only_up_and_undrained_nodes_are_offered() -> None:
    assert node_usable("IDLE") and node_usable("MIXED") and node_usable("ALLOCATED")
    assert not node_usable("IDLE+DRAIN") and not node_usable("DOWN*") and not node_usable("IDLE*")
    assert not node_usable("DRAINED") and not node_usable("MIXED+MAINT")


def test_exit_codes_are_the_code_or_minus_the_signal() -> None:
    assert _exit_code("0:0") == 0 and _exit_code("3:0") == 3 and _exit_code("0:9") == -9 and _exit_code("") is None


def test_squeue_times_as_22_05_and_later_versions_write_them() -> None:
    assert _epoch(1796659581) == 1796659581.0  # 22.05: a number
    assert _epoch({"set": True, "infinite": False, "number": 1796659581}) == 1796659581.0  # 23.02 on
    assert _epoch({"set": False, "infinite": False, "number": 0}) is None
    assert _epoch(0) is None and _epoch(None) is None and _epoch(True) is None and _epoch("soon") is None
