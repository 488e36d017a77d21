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
    "attention: {kernel} kernel on {device}": "atenção: kernel {kernel} em {device}",
    (
        "--gpu cpu plans one CPU host: no --gpus beyond 1, no --fabric, no fp8 (CPUs have no FP8 matmuls). "
        "To fix: drop those options, or name a GPU."
    ): (
        "--gpu cpu planeja uma máquina (a CPU): nada de --gpus acima de 1, de --fabric nem de fp8 (CPUs não têm "
        "multiplicações em FP8). Como corrigir: tire essas opções, ou indique uma GPU."
    ),
    "--gpu cpu plans the CPU host itself, which no offer rents. To fix: drop --offer, or name a GPU.": (
        "--gpu cpu planeja a própria máquina (a CPU), que nenhuma oferta aluga. Como corrigir: tire --offer, ou "
        "indique uma GPU."
    ),
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
    "prior for {gpu} (docs/catalog.md, MFU priors)": "estimativa a priori para {gpu} (docs/catalog.md, MFU)",
    "Measured: one training step traced with PyTorch's MemTracker on fake tensors, run as on {device} "
    "(its optimizer implementation, autocast lists and attention kernel).": (
        "Medido: um passo de treino rastreado com o MemTracker do PyTorch em tensores falsos, executado como em "
        "{device} (a implementação do otimizador, as listas do autocast e o kernel de atenção de lá)."
    ),
    "The step keeps the model's outputs ({mib:,.1f} MiB of logits) until it ends, as a training loop that holds "
    "`outputs` does; Hugging Face's Trainer frees them before backward, with a peak up to that much lower.": (
        "O passo mantém as saídas do modelo ({mib:,.1f} MiB de logits) até o fim, como faz um laço de treino que "
        "guarda `outputs`; o Trainer do Hugging Face as libera antes do backward, com um pico até essa quantia menor."
    ),
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
    "{n:,.1f} ms": "{n:,.1f} ms",
    "{n:,.2f} s": "{n:,.2f} s",
    "{n:,.1f} k": "{n:,.1f} mil",
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
    "Data loading needs about {cores} CPU cores (GPUs x (workers + 1) + 4, docs/catalog.md); the server has {have}. "
    "Pre-tokenise or pre-decode the data, or pick a server with more cores.": (
        "O carregamento de dados precisa de cerca de {cores} núcleos de CPU (GPUs x (workers + 1) + 4, "
        "docs/catalog.md); o servidor tem {have}. Pré-tokenize ou pré-decodifique os dados, ou escolha um servidor "
        "com mais núcleos."
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
    "Unknown {kind} {name!r}. Did you mean {alternatives}? To fix: run '{listing}' for the list.": (
        "{kind} desconhecido(a): {name!r}. Você quis dizer {alternatives}? Como corrigir: rode '{listing}' para ver a"
        " lista."
    ),
    "Unknown {kind} {name!r}. To fix: run '{listing}' for the list.": (
        "{kind} desconhecido(a): {name!r}. Como corrigir: rode '{listing}' para ver a lista."
    ),
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
    # --- the CLI's help: command descriptions ---
    "Plan, benchmark, run and govern ML training on dedicated GPU servers.": (
        "Planeje, meça, rode e governe treinos de ML em servidores de GPU dedicados."
    ),
    (
        "Measure this server against what it promises: GPU bandwidth and TFLOP/s, collectives (algbw/busbw"
        " as\nnccl-tests), host memory, storage read and data-loader rate, with verdicts on the seed's"
        " criteria.\nWith --train-step, time real training steps of a model instead and calibrate the planner's MFU."
    ): (
        "Mede este servidor contra o que ele promete: banda e TFLOP/s das GPUs, coletivas (algbw/busbw como"
        " o\nnccl-tests), memória do host, leitura do armazenamento e taxa do data loader, com veredictos"
        " pelos critérios de referência.\nCom --train-step, cronometra passos reais de treino de um modelo e"
        " calibra o MFU do planejador."
    ),
    (
        "Queue and run training jobs on this machine's GPUs, or on a Slurm cluster: whole GPUs per job,"
        " priorities,\npreemption, restarts from checkpoints, live metrics. Jobs survive a server crash and"
        " are adopted when it\nstarts again."
    ): (
        "Enfileira e roda jobs de treino nas GPUs desta máquina, ou num cluster Slurm: GPUs inteiras por"
        " job, prioridades,\npreempção, reinícios a partir de checkpoints, métricas ao vivo. Os jobs"
        " sobrevivem a uma queda do servidor e são\nadotados quando ele volta."
    ),
    "Submit a job spec to the server's queue.": "Envia uma especificação de job para a fila do servidor.",
    "The server's jobs, newest first, a page at a time.": (
        "Os jobs do servidor, dos mais novos aos mais antigos, uma página por vez."
    ),
    ("One job: its fields, attempts, checkpoints, why it failed, and its loss curve (or one metric's, --metric)."): (
        "Um job: seus campos, tentativas, checkpoints, por que falhou e sua curva de loss (ou a de uma"
        " métrica, --metric)."
    ),
    "A job's output. With -f, follows it (and the next attempts, if the job restarts) until the job ends.": (
        "A saída de um job. Com -f, acompanha (e as próximas tentativas, se o job reiniciar) até o job terminar."
    ),
    "Cancel a job: a queued one at once, a running one with SIGTERM and its grace period, then SIGKILL.": (
        "Cancela um job: um na fila na hora, um em execução com SIGTERM e seu prazo de tolerância, depois SIGKILL."
    ),
    "Every metric a job logged: a summary of each key, or every point with --csv or --json.": (
        "Todas as métricas que um job registrou: um resumo de cada chave, ou todos os pontos com --csv ou --json."
    ),
    ("Resubmit a finished job as a new job that continues from its last checkpoint (--from-scratch: from step 0)."): (
        "Reenvia um job terminado como um novo job que continua do seu último checkpoint (--from-scratch: do passo 0)."
    ),
    "Let USER's jobs read DATASET for these purposes (each must be one the dataset was registered for).": (
        "Permite que os jobs de USER leiam DATASET para estas finalidades (cada uma deve ser uma das"
        " registradas no dataset)."
    ),
    "Erase a data subject (LGPD Art. 18 VI): new versions without them, old bytes purged, models marked.": (
        "Elimina um titular de dados (LGPD Art. 18 VI): novas versões sem ele, bytes antigos expurgados,"
        " modelos marcados."
    ),
    "The GPU catalog.": "O catálogo de GPUs.",
    "The model presets.": "Os modelos predefinidos.",
    (
        "Which server to rent: the cheapest configurations that fit, meet the deadline and budget, and"
        " keep\nthe data where it may be."
    ): (
        "Qual servidor alugar: as configurações mais baratas que cabem, cumprem o prazo e o orçamento, e"
        " mantêm\nos dados onde podem ficar."
    ),
    "Will it fit, and with which settings?": "Vai caber, e com quais configurações?",
    (
        "Training memory per GPU, the fit verdict, what to change when it does not fit, the run time,"
        " whether\nstorage and CPUs keep the GPUs fed, and (with --offer) what it costs."
    ): (
        "Memória de treino por GPU, o veredicto, o que mudar quando não cabe, o tempo do treino, se"
        " o\narmazenamento e as CPUs alimentam as GPUs e (com --offer) quanto custa."
    ),
    (
        "Step time and efficiency for 1, 2, 4 ... GPUs, NVLink against PCIe inside a server, the fabric between\n"
        "servers (weak scaling)."
    ): (
        "Tempo do passo e eficiência para 1, 2, 4 ... GPUs, NVLink contra PCIe dentro do servidor, a rede entre\n"
        "servidores (escalabilidade fraca)."
    ),
    "Dedicated against shared GPU for this job: the seed article's table, computed.": (
        "GPU dedicada contra compartilhada para este job: a tabela do artigo de referência, calculada."
    ),
    "Dedicated server against cloud for this job: total cost in BRL, break-even, exchange-rate risk.": (
        "Servidor dedicado contra nuvem para este job: custo total em BRL, ponto de equilíbrio, risco cambial."
    ),
    "Inference memory (weights, KV cache, activations) and a bound on decode speed.": (
        "Memória de inferência (pesos, cache KV, ativações) e um limite da velocidade de decodificação."
    ),
    "People who hold tokens, and their roles.": "As pessoas que têm tokens, e seus papéis.",
    "Add a user. Then give them a token with 'treino tokens create NAME'.": (
        "Adiciona um usuário. Depois dê a ele um token com 'treino tokens create NOME'."
    ),
    "The users and their roles.": "Os usuários e seus papéis.",
    "API tokens: create (shown once), list, revoke.": ("Tokens da API: criar (mostrado uma vez), listar, revogar."),
    "Create a token for USER. The secret is printed once: the server keeps only its hash.": (
        "Cria um token para USER. O segredo é mostrado uma vez: o servidor guarda só o seu hash."
    ),
    "The tokens (never their secrets): whose, created, expiry, revoked.": (
        "Os tokens (nunca seus segredos): de quem, criação, validade, revogação."
    ),
    "Revoke a token: it stops working at once.": "Revoga um token: ele para de funcionar na hora.",
    "Who may read which dataset, for which purposes.": ("Quem pode ler qual dataset, para quais finalidades."),
    "The grants, revoked ones dimmed.": "As permissões, as revogadas esmaecidas.",
    "Revoke a grant: jobs submitted after this may no longer read the dataset.": (
        "Revoga uma permissão: jobs enviados depois disso não podem mais ler o dataset."
    ),
    "International transfer mechanisms (LGPD Art. 33).": ("Mecanismos de transferência internacional (LGPD Art. 33)."),
    "Record the mechanism that lets personal data go to SITE (LGPD Art. 33).": (
        "Registra o mecanismo que permite que dados pessoais vão para SITE (LGPD Art. 33)."
    ),
    "The recorded transfer mechanisms.": "Os mecanismos de transferência registrados.",
    "Datasets: legal basis, purposes, residency, versions.": (
        "Datasets: base legal, finalidades, residência, versões."
    ),
    "The registered datasets and their latest versions, newest first.": (
        "Os datasets registrados e suas últimas versões, dos mais novos aos mais antigos."
    ),
    "One dataset: its legal basis, purposes, residency and every version (purged ones marked).": (
        "Um dataset: sua base legal, finalidades, residência e todas as versões (as expurgadas marcadas)."
    ),
    "The hash-chained audit log.": "O log de auditoria encadeado por hashes.",
    "The audit records, with their hashes, for the DPO or the ANPD (re-verifiable outside treino).": (
        "Os registros de auditoria, com seus hashes, para o DPO ou a ANPD (verificáveis fora do treino)."
    ),
    "The record of processing operations (LGPD Art. 37), as Markdown.": (
        "O registro das operações de tratamento (LGPD Art. 37), em Markdown."
    ),
    "Which jobs read which dataset versions, and their models.": (
        "Quais jobs leram quais versões de datasets, e seus modelos."
    ),
    "Each version of a dataset, the jobs that read it and the models they made.": (
        "Cada versão de um dataset, os jobs que a leram e os modelos que eles geraram."
    ),
    "One model: the job that made it and the dataset versions it was trained on.": (
        "Um modelo: o job que o gerou e as versões de datasets com que foi treinado."
    ),
    "Every model the server recorded, newest first; those trained on erased data are highlighted.": (
        "Todos os modelos que o servidor registrou, dos mais novos aos mais antigos; os treinados com dados"
        " eliminados ficam destacados."
    ),
    "Data subject rights (LGPD Art. 18).": "Direitos dos titulares de dados (LGPD Art. 18).",
    "What the server holds about a data subject (LGPD Art. 18 II): datasets, versions, models, erasures.": (
        "O que o servidor guarda sobre um titular de dados (LGPD Art. 18 II): datasets, versões, modelos, eliminações."
    ),
    "Show tracebacks.": "Mostra os tracebacks.",
    "Language of the output: en or pt-BR (default: from LC_ALL, LC_MESSAGES or LANG).": (
        "Idioma da saída: en ou pt-BR (padrão: de LC_ALL, LC_MESSAGES ou LANG)."
    ),
    "Show treino's version and exit.": "Mostra a versão do treino e sai.",
    "Options": "Opções",
    "Commands": "Comandos",
    "Arguments": "Argumentos",
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
    # --- treino jobs, show, submit --wait: why a job waits, its times (treino.cli.job_status, treino.cli.wait) ---
    "#{position} in the queue; ": "#{position} na fila; ",
    "(exit code {code})": "(código de saída {code})",
    "--- attempt {n} ---": "--- tentativa {n} ---",
    "Job {id} ({name}) {state}": "Job {id} ({name}) {state}",
    "Stopped waiting; job {id} goes on (treino cancel {id} stops it).": (
        "Parei de esperar; o job {id} continua (treino cancel {id} o interrompe)."
    ),
    "ETA {span}": "previsão {span}",
    "ran {span}": "rodou {span}",
    "took {span}": "durou {span}",
    "backfill": "backfill",
    "backfill ({jobs} at {clock})": "backfill ({jobs} às {clock})",
    "backfill ({jobs})": "backfill ({jobs})",
    "resources": "recursos",
    "queue": "fila",
    "quota": "cota",
    "slurm": "slurm",
    "job {ids}": "job {ids}",
    "jobs {ids}": "jobs {ids}",
    "preempting {jobs}": "preemptando {jobs}",
    "pending": "pendente",
    "waiting": "aguardando",
    "queue wait": "espera na fila",
    "duration": "duração",
    "not yet considered by the scheduler (just submitted)": (
        "ainda não considerado pelo escalonador (acabou de ser enviado)"
    ),
    "{span} (at {clock}, at the last measured steps/s)": "{span} (às {clock}, aos últimos passos/s medidos)",
    "{span} (first start to end, requeues included)": "{span} (do primeiro início ao fim, incluindo as voltas à fila)",
    "{span} so far": "{span} até agora",
    # --- treino offers, sites, --fx-rate (treino.cli.catalog_cmds) ---
    "/month": "/mês",
    "R$/GPU-h": "R$/GPU-h",
    "Rate: {rate:g} BRL/USD (--fx-rate, given by you).": "Câmbio: {rate:g} BRL/USD (--fx-rate, informado por você).",
    "Rate: {rate:g} BRL/USD on {date} (catalog fx.csv: {source}).": (
        "Câmbio: {rate:g} BRL/USD em {date} (catálogo fx.csv: {source})."
    ),
    "Prices: {dedicated} ({dedicated_as_of}); {cloud} ({cloud_as_of}).": (
        "Preços: {dedicated} ({dedicated_as_of}); {cloud} ({cloud_as_of})."
    ),
    "US$ {price:,.2f}": "US$ {price:,.2f}",
    "Where each price comes from: treino offers --sources (or --json).": (
        "De onde vem cada preço: treino offers --sources (ou --json)."
    ),
    "as of": "data",
    "price, as of": "preço, data",
    "city": "cidade",
    "country": "país",
    "provider": "fornecedor",
    "tier": "tier",
    "no site on record": "sem local registrado",
    "{n} offer(s)": "{n} oferta(s)",
    "{n} site(s)": "Locais: {n}",
    # --- treino usage, quotas (treino.cli.usage) ---
    "GPU usage of {scope}, {since} to {until}, by {by}": "Uso de GPUs de {scope}, de {since} a {until}, por {by}",
    "GPU-hours/month": "GPU-horas/mês",
    "Job {id} ({owner}) waits: {reason}": "O job {id} ({owner}) aguarda: {reason}",
    "No price is set: GPU-hours only. To price them: "
    "treino server --offer ID (see treino offers) or --gpu-hour-brl 12.50.": (
        "Nenhum preço definido: só GPU-horas. Para precificá-las: "
        "treino server --offer ID (veja treino offers) ou --gpu-hour-brl 12.50."
    ),
    "Price: {basis}": "Preço: {basis}",
    "Source: {note}": "Fonte: {note}",
    "Quota ({set_for}): {hours} (resets {resets}); {gpus}.": "Cota ({set_for}): {hours} (renova em {resets}); {gpus}.",
    "Quota of {kind} {name}: {limits}.": "Cota de {kind} {name}: {limits}.",
    "Removed the quota of {kind} {name}.": "Cota de {kind} {name} removida.",
    "no limit on GPU-hours a month": "sem limite de GPU-horas por mês",
    "no limit on GPUs at once": "sem limite de GPUs ao mesmo tempo",
    "{n:g} GPU-hours a month": "{n:g} GPU-horas por mês",
    "{n} GPUs at once": "{n} GPUs ao mesmo tempo",
    "{n} GPU(s) held now, no limit at once": "{n} GPU(s) ocupada(s) agora, sem limite ao mesmo tempo",
    "{n} of {limit} GPUs held at once": "{n} de {limit} GPUs ocupadas ao mesmo tempo",
    "{n} quota(s)": "{n} cota(s)",
    "{used:.2f} GPU-hours used this month, no limit": "{used:.2f} GPU-horas usadas neste mês, sem limite",
    "{used:.2f} of {limit:g} GPU-hours this month": "{used:.2f} de {limit:g} GPU-horas neste mês",
    # --- the CLI's new commands and the root's epilog ---
    "Install completion for the current shell.": "Instala o autocompletar para o shell atual.",
    "Show completion for the current shell, to copy it or customize the installation.": (
        "Mostra o autocompletar para o shell atual, para copiá-lo ou personalizar a instalação."
    ),
    "Exit codes, the same with --json: 0 done; 1 a runtime failure (the server, a file, a failed job); "
    "2 a usage error (a bad option or value); 3 the answer is no (the plan does not fit, no offer qualifies). "
    "Settings: ~/.config/treino/config.yaml (url:, token:); see the README.": (
        "Códigos de saída, os mesmos com --json: 0 feito; 1 uma falha na execução (o servidor, um arquivo, um job que "
        "falhou); 2 um erro de uso (uma opção ou valor inválido); 3 a resposta é não (o plano não cabe, nenhuma oferta "
        "se qualifica). Configurações: ~/.config/treino/config.yaml (url:, token:); veja o README."
    ),
    'Print the shell completion script for bash, zsh or fish (e.g. eval "$(treino completion bash)").': (
        'Imprime o script de autocompletar para bash, zsh ou fish (ex.: eval "$(treino completion bash)").'
    ),
    "The catalog's offers: servers and instances, where they are, their GPUs and their dated prices.": (
        "As ofertas do catálogo: servidores e instâncias, onde ficam, suas GPUs e seus preços datados."
    ),
    "The catalog's sites: data centres and cloud regions, with their country (for --residency).": (
        "Os locais do catálogo: data centers e regiões de nuvem, com seu país (para --residency)."
    ),
    "GPU-hours per user, purpose or job, and what they cost in BRL at the server's price (treino server --offer\n"
    "or --gpu-hour-brl). Running jobs count up to now.": (
        "GPU-horas por usuário, finalidade ou job, e quanto custam em BRL ao preço do servidor (treino server --offer\n"
        "ou --gpu-hour-brl). Jobs em execução contam até agora."
    ),
    "Limits on users' and roles' GPUs: GPU-hours a month, at once.": (
        "Limites de GPUs de usuários e papéis: GPU-horas por mês, ao mesmo tempo."
    ),
    "Set a user's or a role's quota (admins). A limit left out is no limit; with neither, the quota is removed.": (
        "Define a cota de um usuário ou de um papel (admins). Um limite omitido é sem limite; sem nenhum, a cota é"
        " removida."
    ),
    "Every quota (admins).": "Todas as cotas (admins).",
    "Slurm's accounting (sacct: AllocTRES x time)": "a contabilidade do Slurm (sacct: AllocTRES x tempo)",
    "the server's records (attempts' start and end x GPUs held)": (
        "os registros do servidor (início e fim das tentativas x GPUs ocupadas)"
    ),
    # retention (treino.govern.retention): the data page's flag
    "retention expired": "retenção vencida",
    "reads refused: treino data retain": "leituras recusadas: treino data retain",
    # the memorisation check of an erasure's SISA retraining (treino.sisa): the data page's erasure table
    "memorisation check": "teste de memorização",
    "before": "antes",
    "after": "depois",
    "gap": "diferença",
    # commands of LGPD II (users disable/enable, data add --strict, data retain, audit anchors, model quarantine)
    "Disable a user: their tokens and dashboard sessions fail at once; their running jobs go on.": (
        "Desativa um usuário: seus tokens e sessões do painel falham na hora; seus jobs em execução continuam."
    ),
    "Enable a disabled user again: their tokens that are not revoked or expired work again.": (
        "Reativa um usuário desativado: seus tokens não revogados nem expirados voltam a funcionar."
    ),
    "Register a dataset: the server copies PATH into its store as a new version and records why it may hold it.\n"
    "Rows of subjects erased earlier are stripped (counted in a warning), or with --strict the file is refused.": (
        "Registra um dataset: o servidor copia PATH para o seu repositório como nova versão e registra por que pode "
        "guardá-lo.\nLinhas de titulares já eliminados são retiradas (contadas num aviso), ou com --strict o "
        "arquivo é recusado."
    ),
    "A dataset past its retention period: extend the period on a documented legal basis (LGPD Art. 16), or erase\n"
    "the dataset. Both are audited (retention.extend, retention.erase).": (
        "Um dataset além do prazo de retenção: prorroga o prazo com uma base legal documentada (LGPD Art. 16), ou "
        "elimina\no dataset. Ambos ficam na auditoria (retention.extend, retention.erase)."
    ),
    "Recompute the hash chain and check its signed checkpoints (and anchors). Exit 1 at the first bad record.": (
        "Recalcula a cadeia de hashes e confere seus checkpoints assinados (e âncoras). Sai com 1 no primeiro "
        "registro inválido."
    ),
    "Quarantine a model an erasure marked: it stays on disk, but its file is no longer served.": (
        "Põe em quarentena um modelo marcado por uma eliminação: fica no disco, mas seu arquivo deixa de ser servido."
    ),
    "Delete a model an erasure marked: its files and its job's checkpoint folder are removed; the record stays.": (
        "Apaga um modelo marcado por uma eliminação: seus arquivos e a pasta de checkpoints do job são removidos; "
        "o registro fica."
    ),
    # lifting a model's quarantine (treino lineage lift, treino.server.quarantine): CLI, dashboard, API refusals
    "Lift a model's quarantine: its file is served again. Refused while the erasure that marked it has not been\n"
    "carried through to it (its job retrained), unless --legal-basis names why the law keeps it in use.": (
        "Suspende a quarentena de um modelo: seu arquivo volta a ser servido. Recusado enquanto a eliminação que o "
        "marcou não tiver sido levada até ele (seu job retreinado),\na menos que --legal-basis diga por que a lei o "
        "mantém em uso."
    ),
    "Id of a quarantined model ('treino lineage models').": "Id de um modelo em quarentena ('treino lineage models').",
    "Why it may be used again; kept in the audit chain.": (
        "Por que pode voltar a ser usado; fica na cadeia de auditoria."
    ),
    "The legal basis for using it although its erasure has not been carried through (LGPD Art. 16).": (
        "A base legal para usá-lo embora sua eliminação não tenha sido levada até ele (LGPD Art. 16)."
    ),
    "Model {id}'s quarantine lifted by {who}: its file is served again.": (
        "Quarentena do modelo {id} suspensa por {who}: seu arquivo volta a ser servido."
    ),
    "quarantine": "quarentena",
    "quarantined": "em quarentena",
    "deleted": "apagado",
    "marked": "marcado",
    "lifted": "quarentena suspensa",
    "quarantine lifted": "quarentena suspensa",
    "lifted {when} by {who}": "suspensa em {when} por {who}",
    "by {who}, {when}": "por {who}, {when}",
    "quarantine lifted {when} by {who} ({ground}): {reason}": (
        "quarentena suspensa em {when} por {who} ({ground}): {reason}"
    ),
    "its erasure carried through by retraining job {job}": "sua eliminação levada até o fim pelo job de retreino {job}",
    "carried through by retraining job {job}": "levada até o fim pelo job de retreino {job}",
    "legal basis: {basis}": "base legal: {basis}",
    "  model #{id} ({kind}) of job #{job}: {state}": "  modelo nº {id} ({kind}) do job nº {job}: {state}",
    "Model {model_id} was deleted by {by}: its files are gone, so there is no quarantine to lift. To fix: use the "
    "retrained model of erasure #{erasure} (treino lineage models).": (
        "O modelo {model_id} foi apagado por {by}: seus arquivos não existem mais, então não há quarentena a "
        "suspender. Como corrigir: use o modelo retreinado da eliminação nº {erasure} (treino lineage models)."
    ),
    "Model {model_id} is not quarantined: there is nothing to lift. To fix: see 'treino lineage model {model_id}' "
    "for its state.": (
        "O modelo {model_id} não está em quarentena: não há nada a suspender. Como corrigir: veja seu estado em "
        "'treino lineage model {model_id}'."
    ),
    "No model {model_id}. To fix: see 'treino lineage models'.": (
        "Não há modelo {model_id}. Como corrigir: veja 'treino lineage models'."
    ),
    "its job {job} was not retrained by that erasure": "seu job {job} não foi retreinado por essa eliminação",
    "its retraining, job {job}, is {state}": "seu retreino, o job {job}, está {state}",
    "wait for job {job} to succeed, then lift it": "espere o job {job} terminar com sucesso e então suspenda-a",
    "retrain it (treino resubmit {job} --from-scratch) and use the new model, or delete this one (treino lineage "
    "delete {model_id})": (
        "retreine-o (treino resubmit {job} --from-scratch) e use o novo modelo, ou apague este (treino lineage "
        "delete {model_id})"
    ),
    "Model {model_id} still holds data of erasure #{erasure}, which has not been carried through to it: {why}. "
    "Lifting its quarantine would put the erased subject's data back in use (LGPD Art. 18 VI). To fix: {fix}; or, "
    "where the law requires keeping this model in use despite the erasure (LGPD Art. 16), name that basis with "
    "--legal-basis.": (
        "O modelo {model_id} ainda guarda dados da eliminação nº {erasure}, que não foi levada até ele: {why}. "
        "Suspender sua quarentena poria os dados do titular eliminado de volta em uso (LGPD Art. 18 VI). Como "
        "corrigir: {fix}; ou, onde a lei exigir manter este modelo em uso apesar da eliminação (LGPD Art. 16), "
        "indique essa base com --legal-basis."
    ),
    # the network between servers (plan scale, recommend, offers)
    "fabric": "rede",
    "servers": "servidores",
    "single server": "um servidor só",
    "{model} on {gpu}: weak scaling (same micro-batch per GPU)": (
        "{model} em {gpu}: escalabilidade fraca (mesmo micro-batch por GPU)"
    ),
    "{link} inside each server ({n} GPUs)": "{link} dentro de cada servidor ({n} GPUs)",
    (
        "Between servers: {fabric} ({rate:,.0f} GB/s a server). Beyond one server the all-reduce is a reduce-scatter "
        "inside each server over {link}, an all-reduce between servers over the fabric and an all-gather inside each "
        "server (or one ring through every GPU, when faster); 'fabric' is the fabric's share of its time."
    ): (
        "Entre servidores: {fabric} ({rate:,.0f} GB/s por servidor). Além de um servidor, o all-reduce é um "
        "reduce-scatter dentro de cada servidor por {link}, um all-reduce entre servidores pela rede e um all-gather "
        "dentro de cada servidor (ou um anel por todas as GPUs, quando mais rápido); 'rede' é a parte do seu tempo "
        "gasta na rede."
    ),
    "No network between servers: one server at most.": "Sem rede entre servidores: no máximo um servidor.",
    (
        "The link between servers dominates from {gpus} GPUs ({servers} servers): its part of the all-reduce takes "
        "{inter}, the part inside servers {intra}."
    ): (
        "A ligação entre servidores domina a partir de {gpus} GPUs ({servers} servidores): sua parte do all-reduce "
        "leva {inter}, a parte dentro dos servidores {intra}."
    ),
    "{link}: efficiency stays at or above 90 % up to {gpus} GPUs.": (
        "{link}: a eficiência fica em 90 % ou mais até {gpus} GPUs."
    ),
    (
        "{link}: efficiency falls below 90 % at {gpus} GPUs ({efficiency:.0%}): the gradient all-reduce that "
        "backward cannot hide is {exposed:.0%} of each step."
    ): (
        "{link}: a eficiência cai abaixo de 90 % com {gpus} GPUs ({efficiency:.0%}): o all-reduce dos gradientes "
        "que o backward não esconde é {exposed:.0%} de cada passo."
    ),
    "one server only: the offer names no network between servers": (
        "um servidor só: a oferta não indica rede entre servidores"
    ),
    "{servers} servers joined by {fabric}, included in the price": (
        "{servers} servidores ligados por {fabric}, incluída no preço"
    ),
    "{servers} servers joined by {fabric}, {cost} of the cost": (
        "{servers} servidores ligados por {fabric}, {cost} do custo"
    ),
    "{servers} servers joined by {fabric}; the offer gives no price for it, not included": (
        "{servers} servidores ligados por {fabric}; a oferta não dá preço para ela, não incluída"
    ),
    "{servers} servers joined by {fabric}: {inter} of it between servers": (
        "{servers} servidores ligados por {fabric}: {inter} disso entre servidores"
    ),
    "measured on {device}, {date}: {model} at micro-batch {micro_batch} x {seq_len} tokens, MFU {mfu:.1f} %": (
        "medido em {device}, {date}: {model} com micro-batch {micro_batch} x {seq_len} tokens, MFU {mfu:.1f} %"
    ),
    "wall": "relógio",
    "measured": "medido",
    "datasheet": "ficha técnica",
    "Train step: {model} on {device}, micro-batch {micro_batch} x {seq_len} tokens, {precision}: {time} "
    "(median of {steps} steps; {warmup} warm-up step(s) excluded; {clock} time).": (
        "Passo de treino: {model} em {device}, micro-batch {micro_batch} x {seq_len} tokens, {precision}: {time} "
        "(mediana de {steps} passos; {warmup} passo(s) de aquecimento excluído(s); tempo de {clock})."
    ),
    "MFU {mfu} %: {flops} TFLOP per step (the planner's count) over a peak of {peak} TFLOP/s ({source}).": (
        "MFU {mfu} %: {flops} TFLOP por passo (a contagem do planejador) sobre um pico de {peak} TFLOP/s ({source})."
    ),
    "The planner's prior predicted {predicted} (MFU {mfu} %, {source}): {error} % off the measured step.": (
        "A estimativa a priori do planejador previa {predicted} (MFU {mfu} %, {source}): {error} % em relação ao "
        "passo medido."
    ),
    "Profile: {path}. Plans on {device} with --profile {path} now use this MFU for {family} models "
    "of {low} to {high} parameters.": (
        "Perfil: {path}. Planos em {device} com --profile {path} passam a usar este MFU para modelos {family} "
        "de {low} a {high} parâmetros."
    ),
    "MFU {mfu} % ({source}).": "MFU {mfu} % ({source}).",
    "MFU on {gpu}: {source}.": "MFU em {gpu}: {source}.",
}
