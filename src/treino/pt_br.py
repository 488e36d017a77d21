"""The pt-BR catalog: every text treino shows, keyed by its English form (treino.i18n explains the mechanism).

To translate a new string: use it through `t("...")` in a template, `loc.t`/`tr` in Python, or a `Msg("... {field}
...")` template, and add its entry here. tests/test_i18n.py lists every key the code uses that is missing here.
"""

from __future__ import annotations

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
    "Audit log": "Log de auditoria",
    "actor": "ator",
    "action": "ação",
    "Search": "Buscar",
    "time": "tempo",
    "date and time": "data e hora",
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
    "NVLink vs PCIe": "NVLink vs PCIe",
    "Slurm job": "job Slurm",
    "The dedicated server pays off above {runs} runs a month.": (
        "O servidor dedicado compensa acima de {runs} treinos por mês."
    ),
    "The run: {steps} steps, {time}.": "O treino: {steps} passos, {time}.",
    "This job was cancelled. Resubmit it as a new job that continues from its checkpoint of step {step}?": (
        "Este job foi cancelado. Reenviá-lo como um novo job que continua do seu checkpoint do passo {step}?"
    ),
    "This job's logs are visible only to {readers}.": "Os logs deste job são visíveis apenas para {readers}.",
    "Too many failed logins from your address. Try again in {wait_s} s.": (
        "Muitas tentativas de login falharam a partir do seu endereço. Tente de novo em {wait_s} s."
    ),
    "auto": "automática",
    "erasure #{id}": "eliminação nº {id}",
    "head": "topo",
    "id": "id",
    "link": "ligação",
    "max": "máx.",
    "min": "mín.",
    "needs {need} per GPU, the {gpu} has {have}.": "precisa de {need} por GPU, a {gpu} tem {have}.",
    "seq": "seq.",
    "tokens/s": "tokens/s",
    "total, {months} months": "total, {months} meses",
    "{headroom} headroom on each {gpu}.": "{headroom} de folga em cada {gpu}.",
    "{step_time} per step ({tokens} tokens), {rate} tokens/s, MFU {mfu} % ({source}), {bound}": (
        "{step_time} por passo ({tokens} tokens), {rate} tokens/s, MFU {mfu} % ({source}), {bound}"
    ),
    "days": "dias",
    # --- job states, failure reasons and outcomes (treino.server.db) ---
    "queued": "na fila",
    "running": "em execução",
    "stopping": "parando",
    "succeeded": "concluído",
    "failed": "falhou",
    "cancelled": "cancelado",
    "cancel": "cancelamento",
    "preempt": "preempção",
    "timeout": "tempo esgotado",
    "oom": "sem memória (OOM)",
    "user_error": "erro do usuário",
    "signal": "sinal",
    "node_fault": "falha do nó",
    "disk_full": "disco cheio",
    "no_checkpoint": "sem checkpoint",
    "erasure": "eliminação",
    # Slurm node states (sinfo), shown on the overview
    "idle": "ocioso",
    "mixed": "parcial",
    "allocated": "alocado",
    "down": "fora do ar",
    "drained": "drenado",
    "draining": "drenando",
    "CPU": "CPU",
    # --- the planner (treino.plan): memory parts, phases, bounds, links, advice and its caveats, notes ---
    "weights": "pesos",
    "gradients": "gradientes",
    "activations": "ativações",
    "logits+loss": "logits+loss",
    "temporaries": "temporários",
    "overhead": "sobrecarga",
    "backward": "backward",
    "optimizer step": "passo do otimizador",
    "backward, recompute": "backward, recomputação",
    "compute-bound": "limitado por computação",
    "memory-bound": "limitado por memória",
    "nvlink": "NVLink",
    "pcie": "PCIe",
    "micro-batch 1 + accumulation": "micro-batch 1 + acumulação",
    "selective checkpointing": "checkpointing seletivo",
    "ZeRO-2": "ZeRO-2",
    "full checkpointing": "checkpointing completo",
    "ZeRO-3": "ZeRO-3",
    "2x GPUs + ZeRO-3": "2x GPUs + ZeRO-3",
    "8-bit AdamW": "AdamW de 8 bits",
    "bf16 + fp32 master weights": "bf16 + pesos mestres em fp32",
    "offload optimizer + weights": "descarregar otimizador + pesos na CPU",
    "LoRA r16": "LoRA r16",
    "offload optimizer": "descarregar otimizador na CPU",
    "QLoRA r16 (NF4 base)": "QLoRA r16 (base NF4)",
    "1.5x the communication of data parallel: slower over PCIe than over NVLink": (
        "1,5x a comunicação do paralelismo de dados: mais lento por PCIe do que por NVLink"
    ),
    "costs GPUs, not speed per token": "custa GPUs, não velocidade por token",
    "changes the optimizer's numerics slightly": "muda levemente a numérica do otimizador",
    "Megatron/DeepSpeed style; not PyTorch autocast": "estilo Megatron/DeepSpeed; não o autocast do PyTorch",
    "weights cross PCIe every step; needs CPU RAM for the whole model state": (
        "os pesos cruzam o PCIe a cada passo; precisa de RAM da CPU para todo o estado do modelo"
    ),
    "fine-tunes adapters, not the full model": "ajusta adaptadores, não o modelo inteiro",
    "needs CPU RAM for the optimizer state; the seed article puts the cost at 50-80 %": (
        "precisa de RAM da CPU para o estado do otimizador; o artigo de referência estima o custo em 50-80 %"
    ),
    "fine-tunes adapters on a 4-bit base; some quality loss": (
        "ajusta adaptadores sobre uma base de 4 bits; alguma perda de qualidade"
    ),
    "The optimizer step runs on the CPU (DeepSpeed ZeRO-Offload).": (
        "O passo do otimizador roda na CPU (DeepSpeed ZeRO-Offload)."
    ),
    "prior for {gpu} (hardware-and-prices §7)": "estimativa a priori para {gpu}",  # no internal citation code
    "unverified prior for {gpu}": "estimativa a priori não verificada para {gpu}",
    "{change} ({peak:.1f} GiB with {keys})": "{change} ({peak:.1f} GiB com {keys})",
    "does not fit: the planner needs {need:.1f} GiB per GPU, the {gpu} has {have:.1f} GiB. To fix: {advice}.": (
        "não cabe: o planejador precisa de {need:.1f} GiB por GPU, a {gpu} tem {have:.1f} GiB. Como corrigir: {advice}."
    ),
    "does not fit: the planner needs {need:.1f} GiB per GPU, the {gpu} has {have:.1f} GiB. "
    "To fix: more GPUs with plan: {{zero: 3}}, or a smaller model.": (
        "não cabe: o planejador precisa de {need:.1f} GiB por GPU, a {gpu} tem {have:.1f} GiB. "
        "Como corrigir: mais GPUs com plan: {{zero: 3}}, ou um modelo menor."
    ),
    # --- the server's devices (treino.server.inventory) ---
    "{devices} CPU slots (no GPUs: jobs run on CPU with gloo)": (
        "{devices} slots de CPU (sem GPUs: os jobs rodam na CPU com gloo)"
    ),
    "{devices} x {names} GPU(s) in {domains} NVLink domain(s)": (
        "{devices} x {names} GPU(s) em {domains} domínio(s) NVLink"
    ),
    "{devices} x {names} on {usable} of {nodes} Slurm node(s) (partitions {partitions})": (
        "{devices} x {names} em {usable} de {nodes} nó(s) Slurm (partições {partitions})"
    ),
    # --- dashboard errors and flash messages (treino.server.web, treino.server.api) ---
    "Error": "Erro",
    "Form too large.": "Formulário grande demais.",
    "GPUs, micro-batch and sequence must be positive (GPUs <= 1024).": (
        "GPUs, micro-batch e sequência devem ser positivos (GPUs <= 1024)."
    ),
    "Job {job_id} belongs to {owner}. To fix: ask them or an admin to cancel it.": (
        "O job {job_id} pertence a {owner}. Como corrigir: peça a essa pessoa ou a um admin que o cancele."
    ),
    "Job {job_id} belongs to {owner}: only they or an admin may resubmit it.": (
        "O job {job_id} pertence a {owner}: só essa pessoa ou um admin pode reenviá-lo."
    ),
    "Missing or wrong CSRF token. To fix: reload the page and try again.": (
        "Token CSRF ausente ou errado. Como corrigir: recarregue a página e tente de novo."
    ),
    "No job {job_id}. To fix: list jobs with 'treino jobs'.": (
        "Não existe o job {job_id}. Como corrigir: liste os jobs com 'treino jobs'."
    ),
    "Role {role} may not {action}. To fix: use a token of a user with role {roles}.": (
        "O papel {role} não pode {action}. Como corrigir: use um token de um usuário com papel {roles}."
    ),
    "jobs.read": "ver jobs",
    "jobs.cancel": "cancelar jobs",
    "jobs.submit": "enviar jobs",
    "read job metrics": "ler as métricas de jobs",
    "read the audit log": "ler o log de auditoria",
    "Unknown GPU {gpu!r}. To fix: pick one of the list ('treino gpus').": (
        "GPU desconhecida {gpu!r}. Como corrigir: escolha uma da lista ('treino gpus')."
    ),
    "Unknown model {model!r}. To fix: pick one of the list ('treino models').": (
        "Modelo desconhecido {model!r}. Como corrigir: escolha um da lista ('treino models')."
    ),
    "Unknown {kind} offer {offer!r}.": "Oferta {kind} desconhecida: {offer!r}.",
    "continues job {job_id} from step {step}": "continua o job {job_id} do passo {step}",
    "from step 0": "do passo 0",
    "resubmitted from job {job_id}: {how}": "reenviado a partir do job {job_id}: {how}",
    "tokens must be between 0 and 1e15.": "tokens deve estar entre 0 e 1e15.",
    "{name}: not a number: {raw!r}": "{name}: não é um número: {raw!r}",
    "Job {job_id} is already {state}; nothing to cancel.": "O job {job_id} já está {state}; nada a cancelar.",
    # --- the CLI (treino.cli): plan, recommend, cost; units ---
    "error": "erro",
    "Unknown language {code!r}. To fix: use en or pt-BR.": (
        "Idioma desconhecido {code!r}. Como corrigir: use en ou pt-BR."
    ),
    "{gib:,.2f} GiB": "{gib:,.2f} GiB",
    "{n:,.2f} B": "{n:,.2f} bi",
    "{n:,.1f} M": "{n:,.1f} mi",
    "{n:,.1f} s": "{n:,.1f} s",
    "{n:,.1f} min": "{n:,.1f} min",
    "{n:,.1f} h": "{n:,.1f} h",
    "{n:,.1f} days": "{n:,.1f} dias",
    "{n:,.1f} MB/s": "{n:,.1f} MB/s",
    "{n:,.1f} kB/s": "{n:,.1f} kB/s",
    "{size} over": "{size} além",
    "{model}: {params} params ({trainable} trainable) · {precision} · {optimizer} · micro-batch {micro_batch} × "
    "{seq_len} tokens · {gpus}× {gpu}": (
        "{model}: {params} parâmetros ({trainable} treináveis) · {precision} · {optimizer} · micro-batch "
        "{micro_batch} × {seq_len} tokens · {gpus}× {gpu}"
    ),
    "analytic": "analítico",
    "trace": "rastreio",
    "per GPU": "por GPU",
    "share": "parcela",
    "peak of live tensors": "pico de tensores vivos",
    "at {phase}": "em {phase}",
    "{gpu} memory": "memória da {gpu}",
    "offloaded to CPU RAM": "descarregado na RAM da CPU",
    "note: {text}": "obs.: {text}",
    "all-reduce over {link} {time}, {exposed} not hidden by backward": (
        "all-reduce por {link} {time}, {exposed} não escondidos pelo backward"
    ),
    "Data: the GPUs consume {rate} ({samples:,.0f} {unit}/s); storage gives {storage:,.2f} GB/s": (
        "Dados: as GPUs consomem {rate} ({samples:,.0f} {unit}/s); o armazenamento entrega {storage:,.2f} GB/s"
    ),
    " from the page cache": " do cache de páginas",
    ", {cores} worker cores {samples:,.0f} {unit}/s. ": ", {cores} núcleos de workers {samples:,.0f} {unit}/s. ",
    "images": "imagens",
    "none": "nenhum",
    "storage": "armazenamento",
    "cpu": "CPU",
    "Kept fed.": "Bem alimentadas.",
    "GPUs idle {pct:.0f} % of the time ({bottleneck}).": "GPUs ociosas {pct:.0f} % do tempo ({bottleneck}).",
    "fix: {text}": "correção: {text}",
    "Storage must read {need:,.2f} GB/s and delivers {have:,.2f}: use NVMe (Gen4 ~7 GB/s, Gen5 ~14.8 GB/s, "
    "RAID-0 several), or cache the dataset in RAM.": (
        "O armazenamento precisa ler {need:,.2f} GB/s e entrega {have:,.2f}: use NVMe (Gen4 ~7 GB/s, Gen5 "
        "~14,8 GB/s, RAID-0 vários), ou guarde o dataset em cache na RAM."
    ),
    "Data loading needs about {cores} CPU cores (GPUs x (workers + 1) + 4, S04); the server has {have}. "
    "Pre-tokenise or pre-decode the data, or pick a server with more cores.": (
        "O carregamento de dados precisa de cerca de {cores} núcleos de CPU (GPUs x (workers + 1) + 4); o servidor "
        "tem {have}. Pré-tokenize ou pré-decodifique os dados, ou escolha um servidor com mais núcleos."
    ),
    "Cheapest configurations that fit and meet the limits": "Configurações mais baratas que cabem e cumprem os limites",
    "site": "local",
    "cost": "custo",
    "strategy": "estratégia",
    "Nothing meets every limit. The closest:": "Nada cumpre todos os limites. A mais próxima:",
    "It {miss}.": "Ela {miss}.",
    "* an illustrative example price, not a quote: add your own with --offers FILE": (
        "* um preço de exemplo ilustrativo, não uma cotação: adicione as suas com --offers ARQUIVO"
    ),
    "Rejected ({n}):": "Rejeitadas ({n}):",
    "takes {hours:,.1f} h, {late:,.1f} h past the {deadline:,.0f} h deadline": (
        "leva {hours:,.1f} h, {late:,.1f} h além do prazo de {deadline:,.0f} h"
    ),
    "costs {cost}, {over} over the budget": "custa {cost}, {over} acima do orçamento",
    "is in {site} ({country})": "fica em {site} ({country})",
    "has no site on record": "não tem local registrado",
    "residency {country} required; the offer {where}": "residência {country} exigida; a oferta {where}",
    "does not fit: the leanest strategy needs {need:,.1f} GiB per GPU, the {gpu} has {have:,.1f}": (
        "não cabe: a estratégia mais enxuta precisa de {need:,.1f} GiB por GPU, a {gpu} tem {have:,.1f}"
    ),
    "Cost on {offer}: {total} for {months} month(s) ({per_month} a month; prices as of {as_of}).": (
        "Custo em {offer}: {total} por {months} mês(es) ({per_month} por mês; preços de {as_of})."
    ),
    "{model}: {runs:g} run(s) a month of {tokens:,.0f} tokens, {months} months": (
        "{model}: {runs:g} treino(s) por mês de {tokens:,.0f} tokens, {months} meses"
    ),
    "egress share": "parcela de egress",
    "A {move:g} % move of the BRL/USD rate puts the cloud total between {low} and {high}.": (
        "Uma variação de {move:g} % no câmbio BRL/USD põe o total em nuvem entre {low} e {high}."
    ),
    "Rate: {rate} BRL/USD on {date} ({source}). Prices: {dedicated} ({dedicated_as_of}); {cloud} ({cloud_as_of}).": (
        "Câmbio: {rate} BRL/USD em {date} ({source}). Preços: {dedicated} ({dedicated_as_of}); {cloud} ({cloud_as_of})."
    ),
    "Unknown {kind} {name!r}. Did you mean {alternatives}? See '{listing}'.": (
        "{kind} desconhecido(a): {name!r}. Você quis dizer {alternatives}? Veja '{listing}'."
    ),
    "Unknown {kind} {name!r}. See '{listing}'.": "{kind} desconhecido(a): {name!r}. Veja '{listing}'.",
    "model": "modelo",
    # --- treino jobs, show, submit, cancel (treino.cli.client) ---
    "(deleted: keeps the last K)": "(apagado: guarda os últimos K)",
    "(server data dir)": "(diretório de dados do servidor)",
    "Cancelled job {id} ({name}).": "Job {id} ({name}) cancelado.",
    "Cancelling job {id} ({name}): SIGTERM sent, SIGKILL after {grace:g} s. Watch it with 'treino show {id}'.": (
        "Cancelando o job {id} ({name}): SIGTERM enviado, SIGKILL após {grace:g} s. Acompanhe com 'treino show {id}'."
    ),
    "Continues job {job} from its checkpoint of step {step}.": (
        "Continua o job {job} do seu checkpoint do passo {step}."
    ),
    "Failure: {failure}": "Falha: {failure}",
    "Job {id} ({name})": "Job {id} ({name})",
    "Older jobs: {command}": "Jobs mais antigos: {command}",
    "Submitted job {id} ({name}), {state}.": "Job {id} ({name}) enviado, {state}.",
    "age": "idade",
    "attempts": "tentativas",
    "bytes": "bytes",
    "checkpoint": "checkpoint",
    "checkpoints": "checkpoints",
    "command": "comando",
    "first {first:.4g} · last {last:.4g} · min {min:.4g} over {n} point(s)": (
        "primeiro {first:.4g} · último {last:.4g} · mín. {min:.4g} em {n} ponto(s)"
    ),
    "gpus": "gpus",
    "prio": "prio",
    "tries": "tent.",
    "workdir": "diretório",
    "{attempts} ({restarts} restart(s), {preemptions} preemption(s))": (
        "{attempts} ({restarts} reinício(s), {preemptions} preempção(ões))"
    ),
    "{n} job(s)": "{n} job(s)",
}
