"""The dashboard's two languages: English and Brazilian Portuguese, chosen by the browser's Accept-Language.

Strings are keyed by their English text: a missing translation shows English rather than a key. Numbers, dates and
money follow the locale (pt-BR: 1.234,5 · 29/11/2026 14:05 · R$ 1.234,56, via treino.plan.cost.format_brl).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from treino.plan.cost import format_brl

LOCALES = ("en", "pt-BR")

PT: dict[str, str] = {
    "Overview": "Visão geral",
    "Plan": "Planejar",
    "Data and audit": "Dados e auditoria",
    "Log out": "Sair",
    "Log in": "Entrar",
    "API token": "Token da API",
    "Paste a treino API token (treino tokens create, or the server's admin-token file).": (
        "Cole um token da API do treino (treino tokens create, ou o arquivo admin-token do servidor)."
    ),
    "Invalid, expired or revoked token.": "Token inválido, expirado ou revogado.",
    "Too many failed logins from your address. Try again in": (
        "Muitas tentativas de login falharam a partir do seu endereço. Tente de novo em"
    ),
    "This job's logs are visible only to": "Os logs deste job são visíveis apenas para",
    "GPUs": "GPUs",
    "CPU slots": "Slots de CPU",
    "slot": "slot",
    "free": "livre",
    "Nodes": "Nós",
    "where": "onde",
    "pending in Slurm": "aguardando no Slurm",
    "node": "nó",
    "address": "endereço",
    "partitions": "partições",
    "not offered": "fora de uso",
    "utilisation": "utilização",
    "memory": "memória",
    "temperature": "temperatura",
    "Queue": "Fila",
    "Running": "Em execução",
    "Recent": "Recentes",
    "No jobs waiting.": "Nenhum job na fila.",
    "No jobs running.": "Nenhum job em execução.",
    "job": "job",
    "name": "nome",
    "owner": "dono",
    "state": "estado",
    "priority": "prioridade",
    "submitted": "enviado",
    "step": "passo",
    "steps/s": "passos/s",
    "loss": "loss",
    "ETA": "previsão",
    "devices": "dispositivos",
    "Spec": "Especificação",
    "History": "Histórico",
    "attempt": "tentativa",
    "started": "início",
    "ended": "fim",
    "exit code": "código de saída",
    "outcome": "resultado",
    "Log": "Log",
    "Loss": "Loss",
    "Throughput": "Vazão",
    "Checkpoints": "Checkpoints",
    "path": "caminho",
    "size": "tamanho",
    "on disk": "no disco",
    "yes": "sim",
    "no": "não",
    "Datasets read": "Datasets lidos",
    "dataset": "dataset",
    "version": "versão",
    "purpose": "finalidade",
    "erased": "apagado",
    "Models": "Modelos",
    "kind": "tipo",
    "Cancel": "Cancelar",
    "Resubmit": "Reenviar",
    "Resubmit (continue)": "Reenviar (continuar)",
    "Cancel this job? Its processes are stopped; Resubmit (continue) starts a new job from its last checkpoint.": (
        "Cancelar este job? Seus processos são parados; Reenviar (continuar) inicia um novo job "
        "do seu último checkpoint."
    ),
    "Resubmit from scratch": "Reenviar do zero",
    "This job was cancelled. Resubmit it as a new job that continues from its checkpoint of step": (
        "Este job foi cancelado. Reenviá-lo como um novo job que continua do seu checkpoint do passo"
    ),
    "continues": "continua",
    "from step": "do passo",
    "No metrics yet.": "Ainda sem métricas.",
    "No checkpoints.": "Nenhum checkpoint.",
    "This job reads no governed dataset.": "Este job não lê nenhum dataset governado.",
    "Job cancelled.": "Job cancelado.",
    "Cancellation requested.": "Cancelamento solicitado.",
    "Submitted as job": "Enviado como job",
    "Model": "Modelo",
    "GPU": "GPU",
    "count": "quantidade",
    "precision": "precisão",
    "optimizer": "otimizador",
    "micro-batch": "micro-batch",
    "sequence": "sequência",
    "tokens": "tokens",
    "dedicated offer": "oferta dedicada",
    "cloud offer": "oferta em nuvem",
    "Compute": "Calcular",
    "Memory per GPU": "Memória por GPU",
    "peak": "pico",
    "FITS": "CABE",
    "DOES NOT FIT": "NÃO CABE",
    "headroom on each": "de folga em cada",
    "needs": "precisa de",
    "per GPU, the": "por GPU, a",
    "has": "tem",
    "What makes it fit, cheapest first": "O que faz caber, do mais barato ao mais caro",
    "change": "mudança",
    "flags": "flags",
    "fits": "cabe",
    "speed": "velocidade",
    "same": "igual",
    "Time": "Tempo",
    "per step": "por passo",
    "The run": "O treino",
    "Scaling": "Escalabilidade",
    "efficiency": "eficiência",
    "step time": "tempo do passo",
    "Cost": "Custo",
    "offer": "oferta",
    "hours per run": "horas por treino",
    "per month": "por mês",
    "total": "total",
    "Cheaper": "Mais barato",
    "dedicated": "dedicado",
    "cloud": "nuvem",
    "The dedicated server pays off above": "O servidor dedicado compensa acima de",
    "runs a month": "treinos por mês",
    "Give tokens to see the run time and the cost.": "Informe os tokens para ver o tempo e o custo.",
    "Datasets": "Datasets",
    "classification": "classificação",
    "personal": "pessoal",
    "sensitive": "sensível",
    "not personal": "não pessoal",
    "residency": "residência",
    "legal basis": "base legal",
    "versions": "versões",
    "rows": "linhas",
    "purged": "expurgada",
    "Lineage": "Linhagem",
    "read by jobs": "lida pelos jobs",
    "no job yet": "nenhum job ainda",
    "Erasure requests": "Pedidos de eliminação",
    "subject": "titular",
    "requested": "pedido",
    "deadline": "prazo",
    "requested by": "pedido por",
    "overdue": "atrasado",
    "No erasure requests.": "Nenhum pedido de eliminação.",
    "memorisation check": "teste de memorização",
    "before": "antes",
    "after": "depois",
    "gap": "diferença",
    "Audit log": "Log de auditoria",
    "actor": "ator",
    "action": "ação",
    "Search": "Buscar",
    "time": "hora",
    "detail": "detalhe",
    "Chain intact": "Cadeia íntegra",
    "CHAIN BROKEN": "CADEIA ROMPIDA",
    "records": "registros",
    "signed checkpoints": "checkpoints assinados",
    "first bad record": "primeiro registro inválido",
    "last 200": "últimos 200",
    "Not found": "Não encontrado",
    "Forbidden": "Proibido",
    "live": "ao vivo",
    "No datasets registered.": "Nenhum dataset registrado.",
    "job holding it": "job que a ocupa",
    "months": "meses",
    "steps": "passos",
    "Metrics": "Métricas",
    "keys": "chaves",
    "key": "chave",
    "points": "pontos",
    "last step": "último passo",
    "last": "último",
    "log scale": "escala log",
    "smoothing": "suavização",
    "raw": "bruto",
    "Compare with job #": "Comparar com o job #",
    "Compare": "Comparar",
    "Remove": "Remover",
    "no such job, or not yours to see": "job inexistente, ou que você não pode ver",
    "not visible to you": "não visível para você",
    "could not be read": "não pôde ser lido",
    "none of the jobs shown logged it": "nenhum dos jobs mostrados a registrou",
    # the usage page (treino.server.usage, treino.server.quotas)
    "Usage": "Uso",
    "GPU usage": "Uso de GPUs",
    "everyone": "todos",
    "since": "desde",
    "by": "por",
    "user": "usuário",
    "role": "papel",
    "jobs": "jobs",
    "GPU-hours": "GPU-horas",
    "cost": "custo",
    "Show": "Mostrar",
    "No GPU use in this window.": "Nenhum uso de GPU neste período.",
    "Price": "Preço",
    "No price is set: GPU-hours only (treino server --offer or --gpu-hour-brl).": (
        "Nenhum preço definido: só GPU-horas (treino server --offer ou --gpu-hour-brl)."
    ),
    "Source": "Fonte",
    "Held by a quota": "Retidos por uma cota",
    "Quotas": "Cotas",
    "for": "para",
    "GPU-hours a month": "GPU-horas por mês",
    "GPUs at once": "GPUs ao mesmo tempo",
    "set by": "definida por",
    "set": "definida em",
    "No quotas: set one with treino quotas set.": "Nenhuma cota: defina uma com treino quotas set.",
    "Quota": "Cota",
    "GPU-hours this month": "GPU-horas neste mês",
    "resets": "renova em",
    # why a job waits, its times (treino.server.waits, treino.server.progress)
    "status": "situação",
    "position": "posição",
    "preempting": "preemptando",
    "no machine it may use can seat it now": "nenhuma máquina que ele pode usar o comporta agora",
    "waiting for devices": "aguardando dispositivos",
    "needed": "necessários",
    "held by": "ocupados por",
    "expected free at": "previstos livres em",
    "fits now, but would delay": "cabe agora, mas atrasaria",
    "due to start at": "com início previsto em",
    "a higher-priority job goes first": "um job de prioridade maior vai antes",
    "an earlier job goes first": "um job enviado antes vai primeiro",
    "held by a quota": "retido por uma cota",
    "the cluster cannot be reached": "o cluster está inacessível",
    "took": "durou",
    "waited": "esperou",
    "from the first start to the end, time requeued between attempts included": (
        "do primeiro início ao fim, incluindo o tempo de volta à fila entre tentativas"
    ),
}


@dataclass(frozen=True)
class Locale:
    code: str  # "en" or "pt-BR"

    @property
    def pt(self) -> bool:
        return self.code == "pt-BR"

    def t(self, text: str) -> str:
        return PT.get(text, text) if self.pt else text

    def num(self, value: float | None, digits: int = 0) -> str:
        """1234.5 -> '1,234.5' (en) or '1.234,5' (pt-BR); None -> an en dash."""
        if value is None:
            return "–"
        text = f"{value:,.{digits}f}"
        return text.translate(str.maketrans(",.", ".,")) if self.pt else text

    def money(self, brl: float) -> str:
        return format_brl(brl) if self.pt else f"BRL {brl:,.2f}"

    def when(self, unix_s: float | None) -> str:
        if unix_s is None:
            return "–"
        fmt = "%d/%m/%Y %H:%M:%S" if self.pt else "%Y-%m-%d %H:%M:%S"
        return time.strftime(fmt, time.localtime(unix_s))

    def duration(self, seconds: float | None) -> str:
        if seconds is None or seconds != seconds or seconds < 0:
            return "–"
        if seconds < 120:
            return f"{self.num(seconds, 0)} s"
        if seconds < 2 * 3600:
            return f"{self.num(seconds / 60, 1)} min"
        if seconds < 3 * 86400:
            return f"{self.num(seconds / 3600, 1)} h"
        return f"{self.num(seconds / 86400, 1)} {'dias' if self.pt else 'days'}"

    def gib(self, nbytes: float | None) -> str:
        """Bytes as GiB; '–' when unknown (a Slurm node's GPU memory is not reported to the server)."""
        return "–" if nbytes is None else f"{self.num(nbytes / 2**30, 2)} GiB"

    def filters(self) -> dict[str, Callable[..., str]]:
        return {"num": self.num, "money": self.money, "when": self.when, "duration": self.duration, "gib": self.gib}


def negotiate(accept_language: str | None) -> Locale:
    """The first of the browser's languages (by q) that is Portuguese or English; English otherwise."""
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate((accept_language or "").split(",")):
        lang, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        ranked.append((-q, i, lang.strip().lower()))
    for _q, _i, lang in sorted(ranked):
        if lang.startswith("pt"):
            return Locale("pt-BR")
        if lang.startswith("en"):
            return Locale("en")
    return Locale("en")
