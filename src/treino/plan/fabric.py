"""The network that joins servers (the inter-server fabric), and the all-reduce over it.

A fabric is written `<NICs per server>x<line rate>g-<kind>`, e.g. `8x400g-ib` (a DGX/HGX H100: eight 400G
ConnectX-7 InfiniBand NDR ports, one per GPU), `32x100g-efa` (AWS p5), `2x100g-eth` (two 100 GbE ports, NCCL over
TCP), or `none` (no network between servers: the offer is one server, never several).

    kinds        ib (InfiniBand EDR/HDR/NDR/XDR by line rate), roce (RDMA over Converged Ethernet), efa (AWS Elastic
                 Fabric Adapter), eth (plain Ethernet: NCCL's socket transport, no RDMA)
    bandwidth    NICs x line rate / 8 x what NCCL achieves of it (FABRIC_EFFICIENCY), per server, GB/s

All-reduce beyond one NVLink domain (hardware-and-prices §3.3): NCCL runs either
    ring          one ring through every GPU: 2(p-1)/p x S / min(domain busbw, domain's fabric bandwidth), its pace
                  set by the slowest link (each of the 8 channels leaves a server through its own NIC), or
    hierarchical  reduce-scatter inside each domain (NVLink/PCIe), all-reduce of 1/L of the bytes between domains
                  over the fabric, all-gather inside each domain:
                  2(L-1)/L x S / domain busbw  +  2(N-1)/N x S / domain's fabric bandwidth,
and picks the faster for the message size; so does the planner. Checked against nccl-tests multi-node all_reduce
busbw (2 x DGX A100 over 8 x HDR: 192 GB/s; 4 x P6-B200 over 8 x 400G EFA: 381.8 GB/s; tests/plan/test_fabric.py).

NVLink domains smaller than a server (8-GPU servers of NVLink-bridged pairs: `--nvlink-domain 2`) add a level
between the two: the domains of one server reach each other over PCIe, each GPU through its own x16 host link
(the PCIe-only all-reduce busbw, 0.44-0.56 of the x16 rate, root-complex bound: hardware-and-prices §3.2, S31).
The hierarchical time is the sum over the three levels, each moving what the level below leaves:
                  2(L-1)/L x S / NVLink busbw  +  2(K-1)/K x S / (L x PCIe busbw)  +  2(N-1)/N x S / server's fabric
with L GPUs to a domain, K domains to a server, N servers (the fabric then joins servers, not domains), and the
ring is paced by the slowest of the three: min(NVLink busbw, L x PCIe busbw, server's fabric bandwidth). With one
domain to a server (K = 1) both reduce to the two-level forms above.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from treino.errors import PlanError
from treino.i18n import Msg

# What NCCL achieves of a port's line rate, large messages (hardware-and-prices §2.3, §3.2, §7):
# ib: NDR 48.5 of 50 GB/s (nccl-tests#267), HDR ~24 of 25 (nccl-tests#119, nccl#412, nccl#1576), EDR ~12 of 12.5.
# roce, efa: no per-NIC NCCL figure published for RoCE (§8.3); both take ib_per_nic_efficiency 0.95 (§7, derived).
# eth: NCCL's socket transport over a 100 Gb/s TCP network peaked at 4-6 GB/s busbw of 12.5 (nccl#450, 4 x 8 V100):
# 0.40 of line rate.
FABRIC_EFFICIENCY = {"ib": {100: 0.96, 200: 0.96, 400: 0.97}, "roce": {}, "efa": {}, "eth": {}}
DEFAULT_EFFICIENCY = {"ib": 0.95, "roce": 0.95, "efa": 0.95, "eth": 0.40}
IB_GENERATION = {100: "EDR", 200: "HDR", 400: "NDR", 800: "XDR"}  # InfiniBand by 4x port rate (S02)
KIND_NAMES = {"ib": "InfiniBand", "roce": "RoCE", "efa": "EFA", "eth": "Ethernet"}
NCCL_LATENCY_S = 20e-6  # nccl_small_msg_latency_floor_us, hardware-and-prices §7 (2 nodes: 12.9-19.5 us, §3.4)
_SPEC = re.compile(r"^(\d+)\s*x\s*(\d+(?:\.\d+)?)\s*g-(ib|roce|efa|eth)$")
# What a plan assumes when none is named: the HGX/DGX reference design for NVLink servers (DGX H100: 8 x 400G
# ConnectX-7, one per GPU, hardware-and-prices §2.3); two 100 GbE ports for PCIe servers (assumed).
DEFAULT_FABRIC = {"nvlink": "8x400g-ib", "pcie": "2x100g-eth"}


@dataclass(frozen=True)
class Fabric:
    """The network between servers: `nics` ports per server of `gbit_s` each."""

    kind: str  # "ib", "roce", "efa", "eth"; "none" for no network
    nics: int = 0
    gbit_s: float = 0.0

    @property
    def spec(self) -> str:
        """As written in offers.csv and --fabric: 8x400g-ib, none."""
        return "none" if self.kind == "none" else f"{self.nics}x{self.gbit_s:g}g-{self.kind}"

    @property
    def label(self) -> str:
        """For people: 8×400G InfiniBand NDR, 2×100 GbE (TCP), none."""
        if self.kind == "none":
            return "none"
        if self.kind == "eth":
            return f"{self.nics}×{self.gbit_s:g} GbE (TCP)"
        generation = f" {IB_GENERATION[int(self.gbit_s)]}" if self.kind == "ib" and self.gbit_s in IB_GENERATION else ""
        return f"{self.nics}×{self.gbit_s:g}G {KIND_NAMES[self.kind]}{generation}"

    @property
    def short(self) -> str:
        """For narrow columns: 8×400G IB NDR, 32×100G EFA, 2×100 GbE."""
        if self.kind == "ib":
            return self.label.replace("InfiniBand", "IB")
        return self.label.removesuffix(" (TCP)")

    @property
    def efficiency(self) -> float:
        return FABRIC_EFFICIENCY.get(self.kind, {}).get(int(self.gbit_s), DEFAULT_EFFICIENCY.get(self.kind, 0.0))

    @property
    def server_gb_s(self) -> float:
        """What NCCL moves in and out of one server over all its ports, GB/s per direction."""
        return self.nics * self.gbit_s / 8 * self.efficiency


NO_FABRIC = Fabric("none")


def parse_fabric(text: str) -> Fabric:
    """'8x400g-ib' -> Fabric("ib", 8, 400); 'none' -> NO_FABRIC."""
    spec = text.strip().lower()
    if spec in ("", "none"):
        return NO_FABRIC
    found = _SPEC.match(spec)
    if not found or int(found[1]) < 1 or float(found[2]) <= 0:
        raise PlanError(
            Msg(
                "Unknown fabric {text!r}. To fix: write NICs per server x line rate and kind, e.g. 8x400g-ib, "
                "32x100g-efa, 8x400g-roce, 2x100g-eth, or none.",
                text=text,
            )
        )
    return Fabric(found[3], int(found[1]), float(found[2]))


@dataclass(frozen=True)
class AllReduceTime:
    """One all-reduce of S bytes per GPU over `domains` NVLink domains of `local` GPUs, `units` of them (servers, or
    the domains when a domain is a server or spans several) joined by the fabric."""

    local: int  # GPUs in one domain taking part
    domains: int  # NVLink domains taking part
    intra_seconds: float  # reduce-scatter + all-gather inside each domain (NVLink, or PCIe on PCIe-only servers)
    inter_seconds: float  # the all-reduce of what each server (domain) holds, between them over the fabric
    ring_seconds: float  # one ring through every GPU, paced by its slowest link
    seconds: float  # the faster of ring and hierarchical (intra + cross + inter), as NCCL picks
    algorithm: str  # "ring" or "hierarchical"
    cross_seconds: float = 0.0  # between the NVLink domains of one server, over PCIe (domains smaller than a server)
    units: int = 1  # what the fabric joins: servers when domains are smaller than a server, else domains

    @property
    def fabric_bound(self) -> bool:
        """The inter-server link dominates: its part of the all-reduce takes longer than the parts inside servers."""
        return self.units > 1 and self.inter_seconds > self.intra_seconds + self.cross_seconds


def hierarchical_allreduce(
    nbytes: float,
    gpus: int,
    *,
    domain_gpus: int,
    intra_busbw_gb_s: float,
    fabric: Fabric,
    gpus_per_server: int,
    buckets: int = 1,
    server_gpus: int | None = None,
    cross_busbw_gb_s: float = math.inf,
) -> AllReduceTime:
    """All-reduce of `nbytes` per GPU over `gpus` GPUs, `domain_gpus` to an NVLink domain (the server for PCIe
    servers and HGX boards; 72 for an NVL72 rack; 2 for NVLink-bridged pairs), `gpus_per_server` sharing each
    server's fabric ports. Domains smaller than a server (`server_gpus` of the all-reduce's GPUs to a server; None:
    `gpus_per_server`) reach each other inside it at `cross_busbw_gb_s` per GPU (PCIe), a level of their own."""
    local = max(1, min(gpus, domain_gpus))
    domains = math.ceil(gpus / local)
    latency = buckets * NCCL_LATENCY_S
    intra = 2 * (local - 1) / local * nbytes / (intra_busbw_gb_s * 1e9) + latency if local > 1 else 0.0
    per_server = max(1, min(gpus, server_gpus or gpus_per_server))
    # What the fabric joins: whole servers when domains are smaller than one (their PCIe level first), else domains.
    unit = per_server if domain_gpus < per_server else local
    per_unit = math.ceil(unit / local)  # domains inside one unit: K > 1 only for domains smaller than a server
    cross_gb_s = cross_busbw_gb_s * local  # each GPU of a domain carries its 1/L share over its own host link
    cross = 2 * (per_unit - 1) / per_unit * nbytes / (cross_gb_s * 1e9) + latency if per_unit > 1 else 0.0
    units = math.ceil(gpus / unit)
    if units == 1:
        if per_unit == 1:
            return AllReduceTime(local, domains, intra, 0.0, intra, intra, "ring")
        ring = 2 * (gpus - 1) / gpus * nbytes / (min(intra_busbw_gb_s, cross_gb_s) * 1e9) + latency
        return _faster(local, domains, intra, cross, 0.0, ring, 1)
    if fabric.kind == "none":
        raise PlanError(
            Msg(
                "{gpus} GPUs span {units} servers, and no network joins them. To fix: name the fabric between the "
                "servers (--fabric, e.g. 8x400g-ib), or plan at most one server's GPUs.",
                gpus=gpus,
                units=units,
            )
        )
    # The unit's share of the fabric: each of its GPUs brings its server's ports / GPUs per server.
    unit_gb_s = fabric.server_gb_s / gpus_per_server * unit
    inter = 2 * (units - 1) / units * nbytes / (unit_gb_s * 1e9) + latency
    slowest = min(intra_busbw_gb_s, cross_gb_s if per_unit > 1 else math.inf, unit_gb_s)
    ring = 2 * (gpus - 1) / gpus * nbytes / (slowest * 1e9) + latency
    return _faster(local, domains, intra, cross, inter, ring, units)


def _faster(
    local: int, domains: int, intra: float, cross: float, inter: float, ring: float, units: int
) -> AllReduceTime:
    """Ring or hierarchical (the sum of the levels), whichever is faster for the size, as NCCL picks."""
    hierarchical = intra + cross + inter
    if ring <= hierarchical:
        return AllReduceTime(local, domains, intra, inter, ring, ring, "ring", cross, units)
    return AllReduceTime(local, domains, intra, inter, ring, hierarchical, "hierarchical", cross, units)
