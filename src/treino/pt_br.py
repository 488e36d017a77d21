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
    "PCIe": "PCIe",  # the scale table's column: the share of the all-reduce between NVLink domains
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
    "needs CPU RAM for the optimizer state, and each step waits on its update on the CPU (about +60 % time)": (
        "precisa de RAM da CPU para o estado do otimizador, e cada passo espera a atualização dele na CPU (cerca de "
        "+60 % de tempo)"
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
    "`outputs` does; Hugging Face's Trainer frees them before backward, with a peak up to that much lower "
    "(--loop trainer).": (
        "O passo mantém as saídas do modelo ({mib:,.1f} MiB de logits) até o fim, como faz um laço de treino que "
        "guarda `outputs`; o Trainer do Hugging Face as libera antes do backward, com um pico até essa quantia menor "
        "(--loop trainer)."
    ),
    "NF4 applies to Linear layers only: this model's {gib:,.1f} GiB of MoE experts stay 16-bit, as transformers 5 "
    "holds them as 3-D parameters that bitsandbytes does not quantize (with transformers 4, whose experts were "
    "Linear layers, they were NF4).": (
        "O NF4 vale só para camadas Linear: os {gib:,.1f} GiB de experts MoE deste modelo ficam em 16 bits, porque o "
        "transformers 5 os guarda como parâmetros 3-D, que o bitsandbytes não quantiza (no transformers 4, cujos "
        "experts eram camadas Linear, eram NF4)."
    ),
    "Counted: the {gib:,.2f} GiB of logits a training loop's `outputs` holds through backward. Hugging Face's "
    "Trainer frees them before backward (its compute_loss returns the loss only): plan it with --loop trainer.": (
        "Contados: os {gib:,.2f} GiB de logits que o `outputs` de um laço de treino guarda durante o backward. O "
        "Trainer do Hugging Face os libera antes do backward (o cálculo da loss devolve só a loss): planeje com "
        "--loop trainer."
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
    "egress {pct:.1f} %": "egress {pct:.1f} %",
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
        " as\nnccl-tests), host memory, storage read and data-loader rate, with verdicts on sizing criteria"
        " (docs/catalog.md).\nWith --train-step, time real training steps of a model instead and calibrate the"
        " planner's MFU."
    ): (
        "Mede este servidor contra o que ele promete: banda e TFLOP/s das GPUs, coletivas (algbw/busbw como"
        " o\nnccl-tests), memória do host, leitura do armazenamento e taxa do data loader, com veredictos"
        " por critérios de dimensionamento (docs/catalog.md).\nCom --train-step, cronometra passos reais de treino"
        " de um modelo e"
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
    "Dedicated against shared GPU for this job: memory, time, interruptions, NVLink and isolation, computed.": (
        "GPU dedicada contra compartilhada para este job: memória, tempo, interrupções, NVLink e isolamento, "
        "calculados."
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
    "domains": "domínios",
    "{link} inside each NVLink domain ({domain} GPUs; {n} GPUs a server)": (
        "{link} dentro de cada domínio NVLink ({domain} GPUs; {n} GPUs por servidor)"
    ),
    (
        "Between NVLink domains: {fabric} ({rate:,.0f} GB/s a server). Beyond one domain the all-reduce is a "
        "reduce-scatter inside each domain over {link}, an all-reduce between domains over the fabric and an "
        "all-gather inside each domain (or one ring through every GPU, when faster); 'fabric' is the fabric's share "
        "of its time."
    ): (
        "Entre domínios NVLink: {fabric} ({rate:,.0f} GB/s por servidor). Além de um domínio, o all-reduce é um "
        "reduce-scatter dentro de cada domínio por {link}, um all-reduce entre domínios pela rede e um all-gather "
        "dentro de cada domínio (ou um anel por todas as GPUs, quando mais rápido); 'rede' é a parte do seu tempo "
        "gasta na rede."
    ),
    (
        "Each level's link: NVLink inside each NVLink domain, PCIe Gen{gen} between the {k} domains of one server "
        "({pcie:,.0f} GB/s a GPU), the fabric between servers. Beyond one domain the all-reduce is a reduce-scatter "
        "inside each domain, an all-reduce between the domains of a server, one between servers and an all-gather "
        "inside each domain (or one ring through every GPU, when faster); 'PCIe' and 'fabric' are those levels' "
        "shares of its time."
    ): (
        "A ligação de cada nível: NVLink dentro de cada domínio NVLink, PCIe Gen{gen} entre os {k} domínios de um "
        "servidor ({pcie:,.0f} GB/s por GPU), a rede entre servidores. Além de um domínio, o all-reduce é um "
        "reduce-scatter dentro de cada domínio, um all-reduce entre os domínios de um servidor, outro entre "
        "servidores e um all-gather dentro de cada domínio (ou um anel por todas as GPUs, quando mais rápido); "
        "'PCIe' e 'rede' são as partes do seu tempo gastas nesses níveis."
    ),
    "Between servers: {fabric} ({rate:,.0f} GB/s a server).": (
        "Entre servidores: {fabric} ({rate:,.0f} GB/s por servidor)."
    ),
    "{domains} NVLink domains joined by PCIe: {cross} of it between domains": (
        "{domains} domínios NVLink ligados por PCIe: {cross} disso entre domínios"
    ),
    (
        "{domains} NVLink domains on {servers} servers: {cross} of it between the domains of a server, over PCIe; "
        "{inter} between servers, over {fabric}"
    ): (
        "{domains} domínios NVLink em {servers} servidores: {cross} disso entre os domínios de um servidor, por PCIe; "
        "{inter} entre servidores, por {fabric}"
    ),
    "No network between NVLink domains: one domain at most.": ("Sem rede entre domínios NVLink: no máximo um domínio."),
    (
        "The link between NVLink domains dominates from {gpus} GPUs ({domains} domains): its part of the all-reduce "
        "takes {inter}, the part inside domains {intra}."
    ): (
        "A ligação entre domínios NVLink domina a partir de {gpus} GPUs ({domains} domínios): sua parte do "
        "all-reduce leva {inter}, a parte dentro dos domínios {intra}."
    ),
    "{domains} NVLink domains on {servers} servers, joined by {fabric}: {inter} of it between domains": (
        "{domains} domínios NVLink em {servers} servidores, ligados por {fabric}: {inter} disso entre domínios"
    ),
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
    # --- the CLI's help: each command's own options and arguments ---
    "Small sizes and few repeats (about a minute).": "Tamanhos pequenos e poucas repetições (cerca de um minuto).",
    "Machine-readable output (docs/bench-json.md).": "Saída para programas (docs/bench-json.md).",
    "Write a hardware profile for 'treino plan train --profile'.": (
        "Grava um perfil de hardware para 'treino plan train --profile'."
    ),
    "Comma-separated stages: gpu, collectives, host, storage, dataloader.": (
        "Etapas separadas por vírgula: gpu, collectives, host, storage, dataloader."
    ),
    "Directory whose filesystem the storage test reads (default: a temp dir).": (
        "Diretório cujo sistema de arquivos o teste de armazenamento lê (padrão: um diretório temporário)."
    ),
    "Samples/s the GPUs consume; judges the data loader.": (
        "Amostras/s que as GPUs consomem; serve para julgar o data loader."
    ),
    "Time real training steps of --model and store their MFU in the --save profile.": (
        "Cronometra passos reais de treino de --model e guarda seu MFU no perfil de --save."
    ),
    "With --train-step: preset name or config.json path.": (
        "Com --train-step: nome de um modelo predefinido ou caminho de um config.json."
    ),
    "With --train-step: sequences per step.": "Com --train-step: sequências por passo.",
    "With --train-step: tokens per sequence.": "Com --train-step: tokens por sequência.",
    "With --train-step: fp32, bf16-mixed, fp16-mixed, bf16-true.": (
        "Com --train-step: fp32, bf16-mixed, fp16-mixed, bf16-true."
    ),
    "With --train-step: timed steps (the median).": "Com --train-step: passos cronometrados (vale a mediana).",
    "With --train-step: untimed steps first.": "Com --train-step: passos não cronometrados antes.",
    "With --train-step on a CPU: one thread, timed by CPU time (a shared host's load does not count).": (
        "Com --train-step numa CPU: uma thread, cronometrada pelo tempo de CPU (a carga de uma máquina compartilhada "
        "não conta)."
    ),
    "bash, zsh or fish.": "bash, zsh ou fish.",
    "Only offers with this GPU (see 'treino gpus').": "Só ofertas com esta GPU (veja 'treino gpus').",
    "Only dedicated or cloud offers.": "Só ofertas dedicadas (dedicated) ou em nuvem (cloud).",
    "Only offers at a site in this country (ISO-2).": "Só ofertas num local deste país (ISO-2).",
    "Your own quotes (CSV or YAML), listed with the catalog.": (
        "Suas próprias cotações (CSV ou YAML), listadas com o catálogo."
    ),
    "Print each price's source under the table.": "Imprime a fonte de cada preço abaixo da tabela.",
    "BRL per USD for converting USD prices, instead of the catalog's dated rate (e.g. 5.40).": (
        "BRL por USD para converter preços em USD, em vez do câmbio datado do catálogo (ex.: 5.40)."
    ),
    "Machine-readable output, every field.": "Saída para programas, com todos os campos.",
    "Only sites in this country (ISO-2).": "Só locais deste país (ISO-2).",
    "Machine-readable output.": "Saída para programas.",
    "Database, job logs and checkpoints.": "Banco de dados, logs dos jobs e checkpoints.",
    "Address to listen on.": "Endereço em que escuta.",
    "Port to listen on.": "Porta em que escuta.",
    "'auto': NVIDIA GPUs through NVML; 'cpu:N': N CPU slots (jobs use gloo).": (
        "'auto': GPUs NVIDIA via NVML; 'cpu:N': N slots de CPU (os jobs usam gloo)."
    ),
    "Database URL (default: SQLite in the data dir), e.g. postgresql+psycopg://...": (
        "URL do banco de dados (padrão: SQLite no diretório de dados), ex.: postgresql+psycopg://..."
    ),
    "Where this server is, from the sites catalog (e.g. eveo-sp1): residency decisions.": (
        "Onde fica este servidor, do catálogo de locais (ex.: eveo-sp1): para as decisões de residência."
    ),
    "A folder datasets may be registered from (repeatable).": (
        "Uma pasta de onde datasets podem ser registrados (pode repetir)."
    ),
    "The controller (company) named in the Art. 37 records of processing.": (
        "O controlador (empresa) citado no registro das operações de tratamento do Art. 37."
    ),
    "Catalog GPU to plan jobs against (default: the GPUs found; none on CPU slots).": (
        "GPU do catálogo contra a qual planejar os jobs (padrão: as GPUs encontradas; nenhuma com slots de CPU)."
    ),
    "'local': this machine's GPUs; 'slurm': an existing Slurm cluster (SLURM_CONF).": (
        "'local': as GPUs desta máquina; 'slurm': um cluster Slurm existente (SLURM_CONF)."
    ),
    (
        "Slurm partition jobs may run on, as NAME or NAME=SITE (its site in the sites catalog, for residency); "
        "repeatable. Default: every partition, at --site."
    ): (
        "Partição Slurm em que os jobs podem rodar, como NOME ou NOME=LOCAL (seu local no catálogo de locais, para a "
        "residência); pode repetir. Padrão: todas as partições, em --site."
    ),
    "Slurm account to charge jobs to (sbatch --account).": "Conta Slurm a que os jobs são cobrados (sbatch --account).",
    "Job folders and the dataset store, on a filesystem every node mounts (default: data dir).": (
        "Pastas dos jobs e repositório de datasets, num sistema de arquivos que todos os nós montam (padrão: o "
        "diretório de dados)."
    ),
    "How jobs reach this server (TREINO_URL); default http://HOST:PORT.": (
        "Como os jobs chegam a este servidor (TREINO_URL); padrão http://HOST:PORT."
    ),
    "Who may read a job's logs: 'owner' (its owner) and roles, comma-separated; or 'all'.": (
        "Quem pode ler os logs de um job: 'owner' (seu dono) e papéis, separados por vírgula; ou 'all' (todos)."
    ),
    "Bad tokens one client address may present per window before 429.": (
        "Tokens inválidos que um endereço de cliente pode apresentar por janela antes do 429."
    ),
    "The window of --auth-failures-max, in seconds.": "A janela de --auth-failures-max, em segundos.",
    "How long a dashboard login lasts, in seconds.": "Quanto dura um login no painel, em segundos.",
    "Reverse proxies (comma-separated addresses) whose X-Forwarded-For/-Proto are believed.": (
        "Proxies reversos (endereços separados por vírgula) cujos X-Forwarded-For/-Proto são aceitos."
    ),
    (
        "Unix user local jobs run as, so they cannot read the data dir (needs root). Default as root: treino-job, "
        "created if missing; naming the server's own user runs jobs as it (as before)."
    ): (
        "Usuário Unix com que os jobs locais rodam, para que não possam ler o diretório de dados (exige root). Padrão "
        "como root: treino-job, criado se não existir; indicar o próprio usuário do servidor roda os jobs com ele "
        "(como antes)."
    ),
    "URL to POST signed notifications to (job end, erasure deadline near); repeatable. docs/server.md": (
        "URL para onde enviar (POST) notificações assinadas (fim de job, prazo de eliminação próximo); pode repetir. "
        "docs/server.md"
    ),
    "File holding the webhooks' HMAC secret (default: DATA_DIR/webhook-secret, made once).": (
        "Arquivo com o segredo HMAC dos webhooks (padrão: DATA_DIR/webhook-secret, criado uma vez)."
    ),
    "Notify an open erasure request this many days before its deadline.": (
        "Notifica um pedido de eliminação em aberto esta quantidade de dias antes do prazo."
    ),
    (
        "Erase datasets past their retention period (checked at start and hourly; audited). Off: they are only blocked "
        "for reads and notified."
    ): (
        "Elimina datasets além do prazo de retenção (verificado ao iniciar e a cada hora; auditado). Desligado: só "
        "ficam bloqueados para leitura e notificados."
    ),
    (
        "Catalog offer this server is (treino offers): `treino usage` prices GPU-hours at its monthly price / (GPUs x "
        "730 h)."
    ): (
        "Oferta do catálogo que este servidor é (treino offers): `treino usage` precifica as GPU-horas pelo seu preço "
        "mensal / (GPUs x 730 h)."
    ),
    "Price of one GPU-hour in BRL for `treino usage` (instead of --offer).": (
        "Preço de uma GPU-hora em BRL para `treino usage` (em vez de --offer)."
    ),
    (
        "File outside the data dir (best write-once or remote) to append signed anchors of the audit head to, for "
        "'treino audit verify --anchors'. docs/govern.md"
    ): (
        "Arquivo fora do diretório de dados (de preferência só de acréscimo ou remoto) onde acrescentar âncoras "
        "assinadas do topo da auditoria, para 'treino audit verify --anchors'. docs/govern.md"
    ),
    "URL to POST each audit anchor to, signed as --webhook; repeatable.": (
        "URL para onde enviar (POST) cada âncora de auditoria, assinada como em --webhook; pode repetir."
    ),
    "Seconds between audit anchors (written when the head moved).": (
        "Segundos entre âncoras de auditoria (gravadas quando o topo mudou)."
    ),
    "Job spec, YAML or JSON (see treino.server.spec).": (
        "Especificação do job, em YAML ou JSON (veja treino.server.spec)."
    ),
    "Wait until the job ends; exit 0 if it succeeded, 1 if not.": (
        "Espera o job terminar; sai com 0 se ele foi concluído, 1 se não."
    ),
    "Print its output until it ends (implies --wait).": "Imprime a saída dele até o fim (implica --wait).",
    "Server URL (else TREINO_URL, the config file).": "URL do servidor (senão TREINO_URL, o arquivo de configuração).",
    "API token (else TREINO_TOKEN, the config file).": "Token da API (senão TREINO_TOKEN, o arquivo de configuração).",
    "Only the jobs in this state.": "Só os jobs neste estado.",
    "Newest first, at most this many.": "Os mais novos primeiro, no máximo esta quantidade.",
    "Only jobs older than this id.": "Só jobs mais antigos que este id.",
    "Job id, from 'treino jobs'.": "Id do job, de 'treino jobs'.",
    "Only this metric: its curve, last, min, max ('treino metrics ID').": (
        "Só esta métrica: sua curva, último valor, mín., máx. ('treino metrics ID')."
    ),
    "Keep printing until the job ends.": "Continua imprimindo até o job terminar.",
    "Attempt number (default: the latest).": "Número da tentativa (padrão: a mais recente).",
    "Every point as CSV: step,time,<key>,...": "Todos os pontos em CSV: step,time,<chave>,...",
    "Start again from step 0 instead of the last checkpoint.": "Recomeça do passo 0 em vez do último checkpoint.",
    "Who may read the dataset.": "Quem pode ler o dataset.",
    "Dataset name, from 'treino data list'.": "Nome do dataset, de 'treino data list'.",
    "One of the dataset's purposes (repeatable).": "Uma das finalidades do dataset (pode repetir).",
    "The subject's id in the datasets' subject column.": "O id do titular na coluna de titulares dos datasets.",
    "Only this dataset (default: all).": "Só este dataset (padrão: todos).",
    "Queue the affected jobs again on the new versions.": "Põe de novo na fila os jobs afetados, com as novas versões.",
    "From a date (2026-11-01) or a duration back (30d, 12h). Default: this month.": (
        "A partir de uma data (2026-11-01) ou de um intervalo para trás (30d, 12h). Padrão: este mês."
    ),
    "Group by user, purpose or job.": "Agrupa por usuário (user), finalidade (purpose) ou job.",
    "One user's usage (admins; others see their own).": "O uso de um usuário (admins; os demais veem o próprio).",
    "CSV on stdout (cost_brl with a decimal point).": "CSV na saída padrão (cost_brl com ponto decimal).",
    "Preset name or config.json path.": "Nome de um modelo predefinido ou caminho de um config.json.",
    "Tokens to train on (e.g. 2e9).": "Tokens de treino (ex.: 2e9).",
    "e.g. 3d or 72h.": "ex.: 3d ou 72h.",
    'e.g. "R$ 50.000".': 'ex.: "R$ 50.000".',
    "Country the data must stay in: ISO-2 (e.g. BR) or a site (its country).": (
        "País onde os dados devem ficar: ISO-2 (ex.: BR) ou um local (o país dele)."
    ),
    "Your own quotes (CSV or YAML), added to the catalog.": (
        "Suas próprias cotações (CSV ou YAML), somadas ao catálogo."
    ),
    "Also write a self-contained HTML report with plots.": "Grava também um relatório HTML autocontido, com gráficos.",
    "Profile from 'treino bench --train-step --save': measured MFU for its GPU.": (
        "Perfil de 'treino bench --train-step --save': o MFU medido para a sua GPU."
    ),
    "Preset name, config.json path, or module:function (trace).": (
        "Nome de um modelo predefinido, caminho de um config.json, ou módulo:função (trace)."
    ),
    "GPU name from 'treino gpus', or cpu to plan for the CPU host.": (
        "Nome de uma GPU de 'treino gpus', ou cpu para planejar para a própria máquina (a CPU)."
    ),
    "GPUs in the job.": "GPUs do job.",
    "Sequences per GPU per step.": "Sequências por GPU por passo.",
    "Tokens per sequence.": "Tokens por sequência.",
    "Micro-batches per optimizer step.": "Micro-batches por passo do otimizador.",
    "fp32, bf16-mixed, fp16-mixed, bf16-master, bf16-true, fp8 (torchao float8).": (
        "fp32, bf16-mixed, fp16-mixed, bf16-master, bf16-true, fp8 (float8 do torchao)."
    ),
    "adamw, adamw-8bit, sgd, sgd-momentum, adafactor, lion.": "adamw, adamw-8bit, sgd, sgd-momentum, adafactor, lion.",
    "sdpa (flash-style) or eager.": "sdpa (estilo flash) ou eager.",
    "Activation checkpointing: none, selective, full.": (
        "Checkpointing de ativações: none (nenhum), selective (seletivo), full (completo)."
    ),
    "ZeRO stage 0-3 (FSDP full shard = 3).": "Estágio do ZeRO, 0-3 (FSDP full shard = 3).",
    "Tensor-parallel size.": "Grau de paralelismo de tensor.",
    "Pipeline stages (1F1B).": "Estágios do pipeline (1F1B).",
    "Virtual stages per GPU.": "Estágios virtuais por GPU.",
    "none, optimizer, optimizer+params.": "none (nada), optimizer (otimizador), optimizer+params (otimizador e pesos).",
    "LoRA rank; 0 = full fine-tune.": "Posto (rank) da LoRA; 0 = ajuste fino completo.",
    (
        "Comma-separated module names (default: the attention projections, q_proj,k_proj,v_proj,o_proj; "
        "DeepSeek-V3: q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj)."
    ): (
        "Nomes de módulos separados por vírgula (padrão: as projeções da atenção, q_proj,k_proj,v_proj,o_proj; "
        "DeepSeek-V3: q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj)."
    ),
    "Base weights for LoRA: none or nf4 (QLoRA).": "Pesos de base para a LoRA: none (sem quantização) ou nf4 (QLoRA).",
    "hf (Hugging Face modules) or megatron (fused kernels).": (
        "hf (módulos do Hugging Face) ou megatron (kernels fundidos)."
    ),
    "Megatron sequence parallelism over the TP group.": "Paralelismo de sequência do Megatron sobre o grupo de TP.",
    "analytic (formulas) or trace (real model on fake tensors).": (
        "analytic (fórmulas) ou trace (o modelo real em tensores falsos)."
    ),
    "Tokens in the dataset (e.g. 2e9), for the run time.": "Tokens do dataset (ex.: 2e9), para o tempo do treino.",
    "Passes over --tokens.": "Passadas sobre --tokens.",
    "nvlink or pcie (default: nvlink where the GPU has it).": "nvlink ou pcie (padrão: nvlink onde a GPU tem).",
    (
        "Network between servers beyond 8 GPUs: 8x400g-ib, 32x100g-efa, 2x100g-eth, none (default: 8x400g-ib for "
        "NVLink, 2x100g-eth for PCIe)."
    ): (
        "Rede entre servidores acima de 8 GPUs: 8x400g-ib, 32x100g-efa, 2x100g-eth, none (padrão: 8x400g-ib com "
        "NVLink, 2x100g-eth com PCIe)."
    ),
    "Model FLOPs utilisation; default: a cited prior.": (
        "Utilização de FLOPs do modelo (MFU); padrão: uma estimativa a priori citada."
    ),
    "tokens (pre-tokenised), text, or images (--seq-len = patches).": (
        "tokens (pré-tokenizados), text (texto) ou images (imagens; --seq-len = patches)."
    ),
    "nvme-gen5, nvme-gen4, sata-ssd, hdd, nfs-10gbe.": "nvme-gen5, nvme-gen4, sata-ssd, hdd, nfs-10gbe.",
    "Server CPU cores (default: 8 per GPU).": "Núcleos de CPU do servidor (padrão: 8 por GPU).",
    "Server RAM, GB (default: 128 per GPU).": "RAM do servidor, GB (padrão: 128 por GPU).",
    "Dataset size on disk, GB.": "Tamanho do dataset em disco, GB.",
    "Price the run on this offer (see 'treino offers').": "Precifica o treino nesta oferta (veja 'treino offers').",
    "Hardware profile from 'treino bench --save': measured figures.": (
        "Perfil de hardware de 'treino bench --save': valores medidos."
    ),
    "GPU name from 'treino gpus'.": "Nome de uma GPU de 'treino gpus'.",
    "ZeRO stage used from 2 GPUs on.": "Estágio do ZeRO usado a partir de 2 GPUs.",
    "Largest count, a power of two (on paper up to 1024).": (
        "Maior quantidade, uma potência de dois (no papel, até 1024)."
    ),
    (
        "Network between servers: NICs x rate-kind (8x400g-ib, 32x100g-efa, 8x400g-roce, 2x100g-eth) or none (default: "
        "8x400g-ib for NVLink servers, 2x100g-eth for PCIe ones)."
    ): (
        "Rede entre servidores: placas x taxa-tipo (8x400g-ib, 32x100g-efa, 8x400g-roce, 2x100g-eth) ou none (padrão: "
        "8x400g-ib para servidores com NVLink, 2x100g-eth para os com PCIe)."
    ),
    "GPUs one NVLink domain joins (72 for an NVL72 rack).": "GPUs que um domínio NVLink une (72 num rack NVL72).",
    "MIG profile of the shared GPU: 1g, 2g, 3g, 4g, 7g.": "Perfil MIG da GPU compartilhada: 1g, 2g, 3g, 4g, 7g.",
    "Neighbours taking turns on the GPU.": "Vizinhos que se revezam na GPU.",
    "Tokens per run (e.g. 2e9).": "Tokens por treino (ex.: 2e9).",
    "A dedicated offer (monthly, BRL).": "Uma oferta dedicada (mensal, em BRL).",
    "A cloud offer (hourly, USD).": "Uma oferta em nuvem (por hora, em USD).",
    "Leaves the provider once.": "Sai do fornecedor uma vez.",
    "Downloaded after each run.": "Baixado depois de cada treino.",
    "Exchange-rate move to show, %.": "Variação do câmbio a mostrar, em %.",
    "Your own quotes (CSV or YAML).": "Suas próprias cotações (CSV ou YAML).",
    "Concurrent sequences.": "Sequências simultâneas.",
    "Tokens per sequence (prompt + output).": "Tokens por sequência (prompt + saída).",
    "bf16, fp16, fp32, int8, int4.": "bf16, fp16, fp32, int8, int4.",
    "Tensor-parallel GPUs.": "GPUs em paralelismo de tensor.",
    "User name (letters, digits, '.', '_', '-').": "Nome do usuário (letras, dígitos, '.', '_', '-').",
    "One of admin, engineer, dpo, viewer.": "Um de admin, engineer, dpo, viewer.",
    "User name.": "Nome do usuário.",
    "The user the token acts as (its role is theirs).": (
        "O usuário em nome de quem o token age (o papel do token é o dele)."
    ),
    "A label, e.g. the laptop it lives on.": "Um rótulo, ex.: o notebook onde ele fica.",
    "Valid for this many days.": "Válido por esta quantidade de dias.",
    "Token id, from 'treino tokens list'.": "Id do token, de 'treino tokens list'.",
    "Grant id, from 'treino grants list'.": "Id da permissão, de 'treino grants list'.",
    "Site from the sites catalog, e.g. a cloud region abroad.": (
        "Local do catálogo de locais, ex.: uma região de nuvem no exterior."
    ),
    "anpd-scc, adequacy, specific-clauses, bcr, consent or other.": (
        "anpd-scc (cláusulas-padrão da ANPD), adequacy (adequação), specific-clauses (cláusulas específicas), bcr "
        "(normas corporativas globais), consent (consentimento) ou other (outro)."
    ),
    "The contract or decision, e.g. its number.": "O contrato ou a decisão, ex.: o número dele.",
    "YYYY-MM-DD.": "AAAA-MM-DD.",
    "Dataset name.": "Nome do dataset.",
    "CSV or Parquet file under one of the server's --import-root folders.": (
        "Arquivo CSV ou Parquet dentro de uma das pastas --import-root do servidor."
    ),
    "Does it hold personal data (LGPD Art. 5 I)? Say it either way.": (
        "Contém dados pessoais (LGPD Art. 5 I)? Diga em qualquer caso."
    ),
    "art7-i .. art7-x, art11-i, art11-ii-a .. art11-ii-g, or not-personal (LGPD Art. 7 / Art. 11).": (
        "art7-i .. art7-x, art11-i, art11-ii-a .. art11-ii-g, ou not-personal (não pessoal) (LGPD Art. 7 / Art. 11)."
    ),
    "What it may be used for, e.g. churn-model (repeatable).": (
        "Para que pode ser usado, ex.: churn-model (pode repetir)."
    ),
    "Sensitive personal data (Art. 5 II): needs an Art. 11 basis.": (
        "Dados pessoais sensíveis (Art. 5 II): exigem uma base do Art. 11."
    ),
    "Country it must stay in (ISO-2), or 'any'.": "País onde deve ficar (ISO-2), ou 'any' (qualquer um).",
    "Keep it this many days.": "Guarda por esta quantidade de dias.",
    "The column that identifies a person (for erasure).": "A coluna que identifica uma pessoa (para a eliminação).",
    "When the data was collected (ISO date): retention counts from it.": (
        "Quando os dados foram coletados (data ISO): a retenção conta a partir dela."
    ),
    "Refuse the file if it holds rows of erased subjects (default: strip them).": (
        "Recusa o arquivo se ele tiver linhas de titulares eliminados (padrão: retirá-las)."
    ),
    "A new retention period, from today.": "Um novo prazo de retenção, a partir de hoje.",
    "Why it may be kept longer, e.g. 'Art. 16 I: legal obligation'.": (
        "Por que pode ser guardado por mais tempo, ex.: 'Art. 16 I: obrigação legal'."
    ),
    "The circumstances, for the audit record.": "As circunstâncias, para o registro de auditoria.",
    "Erase the dataset instead: every version purged, its models marked.": (
        "Elimina o dataset em vez disso: todas as versões expurgadas, seus modelos marcados."
    ),
    (
        "An anchor file the server wrote (--audit-anchor): also recompute the chain here from the export and prove "
        "every record up to the last anchor unchanged, even by someone holding the database and key."
    ): (
        "Um arquivo de âncoras que o servidor gravou (--audit-anchor): recalcula também aqui a cadeia a partir da "
        "exportação e prova que nenhum registro até a última âncora mudou, nem por quem tem o banco de dados e a chave."
    ),
    "With --anchors: the server key (DATA_DIR/server-key), to check each anchor's HMAC too.": (
        "Com --anchors: a chave do servidor (DATA_DIR/server-key), para conferir também o HMAC de cada âncora."
    ),
    "jsonl or csv.": "jsonl ou csv.",
    "Only records about this dataset.": "Só registros sobre este dataset.",
    "Only records by this user.": "Só registros deste usuário.",
    "Only records about this subject (the pseudonym a report shows).": (
        "Só registros sobre este titular (o pseudônimo que um relatório mostra)."
    ),
    "ISO 8601 time, inclusive (local without offset).": "Hora em ISO 8601, inclusiva (local, sem fuso).",
    "ISO 8601 time, exclusive.": "Hora em ISO 8601, exclusiva.",
    "Write here instead of stdout.": "Grava aqui em vez da saída padrão.",
    "Model id, from 'treino lineage models'.": "Id do modelo, de 'treino lineage models'.",
    "Id of a model an erasure marked ('treino lineage models').": (
        "Id de um modelo que uma eliminação marcou ('treino lineage models')."
    ),
    "The user the quota is for.": "O usuário a quem a cota se aplica.",
    "Or the role (a user's own quota wins).": "Ou o papel (a cota do próprio usuário prevalece).",
    "GPU-hours per calendar month.": "GPU-horas por mês do calendário.",
    "GPUs held at once; more waits in the queue.": "GPUs ocupadas ao mesmo tempo; além disso, espera na fila.",
    # Click and Typer: the --help option, the marks of a help page, a usage error
    "Show this message and exit.": "Mostra esta mensagem e sai.",
    "[default: {}]": "[padrão: {}]",
    "[required]": "[obrigatório]",
    "[env var: {}]": "[variável de ambiente: {}]",
    "(deprecated) ": "(obsoleto) ",
    "Aborted.": "Interrompido.",
    "Try [blue]'{command_path} {help_option}'[/] for help.": (
        "Tente [blue]'{command_path} {help_option}'[/] para ver a ajuda."
    ),
    # Click's, Typer's and pydantic's usage errors (treino.cli.i18n.USAGE_ERRORS)
    "Error: {message}": "Erro: {message}",
    "Try '{command} {option}' for help.": "Tente '{command} {option}' para ver a ajuda.",
    "Invalid value for {param_hint}: {message}": "Valor inválido para {param_hint}: {message}",
    "Invalid value: {message}": "Valor inválido: {message}",
    "Missing argument {param_hint}. {message}": "Falta o argumento {param_hint}. {message}",
    "Missing option {param_hint}. {message}": "Falta a opção {param_hint}. {message}",
    "Missing parameter {param_hint}. {message}": "Falta o parâmetro {param_hint}. {message}",
    "Missing argument {param_hint}.": "Falta o argumento {param_hint}.",
    "Missing option {param_hint}.": "Falta a opção {param_hint}.",
    "Missing parameter {param_hint}.": "Falta o parâmetro {param_hint}.",
    "Missing argument.": "Falta um argumento.",
    "Missing option.": "Falta uma opção.",
    "Missing parameter.": "Falta um parâmetro.",
    "Choose from:\n\t{choices}": "Escolha entre:\n\t{choices}",
    "No such option: {name} (Possible options: {possibilities})": (
        "Opção inexistente: {name} (opções parecidas: {possibilities})"
    ),
    "No such option: {name}": "Opção inexistente: {name}",
    "Option {name} does not take a value.": "A opção {name} não aceita valor.",
    "Option {name} requires an argument.": "A opção {name} precisa de um valor.",
    "Option {name} requires {nargs} arguments.": "A opção {name} precisa de {nargs} valores.",
    "Argument {name} takes {nargs} values.": "O argumento {name} recebe {nargs} valores.",
    "Got unexpected extra argument(s) ({args})": "Argumento(s) inesperado(s) a mais: {args}",
    "Missing command.": "Falta o comando.",
    "No such command {name}.": "Comando inexistente: {name}.",
    "No such command {name}. Did you mean {suggestions}?": (
        "Comando inexistente: {name}. Você quis dizer {suggestions}?"
    ),
    "{message}. Did you mean {suggestions}?": "{message}. Você quis dizer {suggestions}?",
    "Could not open file {filename}: {message}": "Não foi possível abrir o arquivo {filename}: {message}",
    "unknown error": "erro desconhecido",
    "Value must be an iterable.": "O valor deve ser uma lista.",
    "Value {value} is not a valid {type_name}.": "O valor {value} não é um {type_name} válido.",
    "{value} is not one of {choices}.": "{value} não está entre {choices}.",
    "{label} {filename} does not exist.": "O {label} {filename} não existe.",
    "{label} {filename} is a file.": "O {label} {filename} é um arquivo.",
    "{label} {filename} is a directory.": "O {label} {filename} é um diretório.",
    "{label} {filename} is not readable.": "O {label} {filename} não pode ser lido.",
    "{label} {filename} is not writable.": "O {label} {filename} não pode ser escrito.",
    "file": "arquivo",
    "directory": "diretório",
    "Input should be a valid integer, unable to parse string as an integer": (
        "Deveria ser um número inteiro; o texto não pode ser lido como um inteiro"
    ),
    "Input should be a valid integer, got a number with a fractional part": (
        "Deveria ser um número inteiro; recebeu um número com parte fracionária"
    ),
    "Input should be a valid integer": "Deveria ser um número inteiro",
    "Input should be a valid number, unable to parse string as a number": (
        "Deveria ser um número; o texto não pode ser lido como um número"
    ),
    "Input should be a valid number": "Deveria ser um número",
    "Input should be a finite number": "Deveria ser um número finito",
    "Input should be a valid boolean, unable to interpret input": (
        "Deveria ser um booleano (true/false); o texto não pode ser interpretado"
    ),
    "Input should be a valid boolean": "Deveria ser um booleano (true/false)",
    "Input should be a valid string": "Deveria ser um texto",
    "Input should be {expected}": "Deveria ser {expected}",
    "Value error, {error}": "{error}",  # inside "Invalid value for ...: " already
    # the server's errors, as the CLI and the dashboard show them (sent as data too: treino.server.api.errors)
    "Only the job's own token (TREINO_JOB_TOKEN) or an admin may write this.": (
        "Só o token do próprio job (TREINO_JOB_TOKEN) ou um admin pode escrever aqui."
    ),
    "Job {job_id} is {state}: its processes may no longer write to it.": (
        "O job {job_id} está {state}: seus processos não podem mais escrever nele."
    ),
    "Missing token. To fix: send 'Authorization: Bearer <token>' (treino --token).": (
        "Falta o token. Como corrigir: envie 'Authorization: Bearer <token>' (treino --token)."
    ),
    "the database could not write ({error})": "o banco de dados não conseguiu escrever ({error})",
    "a write failed ({error})": "uma escrita falhou ({error})",
    (
        "The server's disk is full: {what}; the request was not done. Free now: {place}. To fix: free space on that "
        "disk (old checkpoints and logs of finished jobs in {jobs}), then retry. Reads still work."
    ): (
        "O disco do servidor está cheio: {what}; o pedido não foi feito. Livre agora: {place}. Como corrigir: libere"
        " espaço nesse disco (checkpoints e logs antigos de jobs terminados em {jobs}) e tente de novo. As leituras"
        " continuam funcionando."
    ),
    "Not this job's token. To fix: post with the job's own TREINO_JOB_TOKEN, or an admin's token.": (
        "Este não é o token deste job. Como corrigir: envie com o TREINO_JOB_TOKEN do próprio job, ou com o token de"
        " um admin."
    ),
    "the PostgreSQL database": "o banco de dados PostgreSQL",
    (
        "The database is corrupt: {error}. To fix: stop the server and restore {where} from a backup ('treino "
        "server' checks it at start and says how)."
    ): (
        "O banco de dados está corrompido: {error}. Como corrigir: pare o servidor e restaure {where} de um backup"
        " ('treino server' o verifica ao iniciar e diz como)."
    ),
    "PostgreSQL's data directory": "o diretório de dados do PostgreSQL",
    'Give the new retention period in days, or erase: true. To fix: e.g. {{"days": 365, ...}}.': (
        'Informe o novo prazo de retenção em dias, ou erase: true. Como corrigir: p. ex. {{"days": 365, ...}}.'
    ),
    "dataset {name} allows {allowed}, not {asked} (LGPD Art. 6 I). To fix: grant one of the dataset's purposes.": (
        "o dataset {name} permite {allowed}, não {asked} (LGPD Art. 6 I). Como corrigir: conceda uma das finalidades"
        " do dataset."
    ),
    "No grant {grant_id}. To fix: see 'treino grants'.": (
        "Não há concessão {grant_id}. Como corrigir: veja 'treino grants'."
    ),
    "a checkpoint of job {job_id} must be under {checkpoints}": (
        "um checkpoint do job {job_id} precisa estar em {checkpoints}"
    ),
    'give exactly one of user and role. To fix: e.g. {{"user": "ana"}}.': (
        'informe exatamente um entre user e role. Como corrigir: p. ex. {{"user": "ana"}}.'
    ),
    "Only admins see other users' usage. To fix: leave out user, or use {name!r}.": (
        "Só admins veem o uso de outros usuários. Como corrigir: omita user, ou use {name!r}."
    ),
    "No user {name!r}. To fix: create it with 'treino users add {name} --role ...'.": (
        "Não há usuário {name!r}. Como corrigir: crie-o com 'treino users add {name} --role ...'."
    ),
    "a token's name may not start with {prefix!r}. To fix: pick another name.": (
        "o nome de um token não pode começar com {prefix!r}. Como corrigir: escolha outro nome."
    ),
    "User {name!r} exists. To fix: pick another name, or see 'treino users list'.": (
        "O usuário {name!r} já existe. Como corrigir: escolha outro nome, ou veja 'treino users list'."
    ),
    "{name} is you: an admin may not disable their own account. To fix: ask another admin.": (
        "{name} é você: um admin não pode desativar a própria conta. Como corrigir: peça a outro admin."
    ),
    "No token {token_id}. To fix: see 'treino tokens list'.": (
        "Não há token {token_id}. Como corrigir: veja 'treino tokens list'."
    ),
    "Role {role} may not {permission}. To fix: use a token of a user with role {roles}.": (
        "O papel {role} não tem a permissão {permission}. Como corrigir: use um token de um usuário com papel {roles}."
    ),
    "Invalid, expired or revoked token. To fix: use a valid API token.": (
        "Token inválido, expirado ou revogado. Como corrigir: use um token da API válido."
    ),
    "Session expired or logged out. To fix: log in at /login.": (
        "Sessão expirada ou encerrada. Como corrigir: entre em /login."
    ),
    (
        "Too many failed authentications from {address}: {max_failures} bad tokens in {window_s:g} s. To fix: check "
        "the token (treino tokens list), and retry in {wait_s} s."
    ): (
        "Autenticações falhas demais a partir de {address}: {max_failures} tokens inválidos em {window_s:g} s. Como"
        " corrigir: confira o token (treino tokens list) e tente de novo em {wait_s} s."
    ),
    "{path} (filesystem at {mount}): {free} free of {total}": (
        "{path} (sistema de arquivos em {mount}): {free} livres de {total}"
    ),
    "{path} (its free space unknown: {error})": "{path} (espaço livre desconhecido: {error})",
    "No dataset {name!r}. To fix: see 'treino data list'.": (
        "Não há dataset {name!r}. Como corrigir: veja 'treino data list'."
    ),
    (
        "this server accepts no dataset imports. To fix: start it with --import-root DIR (the folders datasets may "
        "be registered from)."
    ): (
        "este servidor não aceita importar datasets. Como corrigir: inicie-o com --import-root DIR (as pastas de onde"
        " datasets podem ser registrados)."
    ),
    (
        "collected_at is in the future: retention runs from when the data was collected. To fix: give the collection "
        "date, or leave it out (retention then runs from the registration)."
    ): (
        "collected_at está no futuro: a retenção conta a partir da coleta dos dados. Como corrigir: informe a data da"
        " coleta, ou omita-a (a retenção então conta a partir do registro)."
    ),
    "Only the job's own token (TREINO_JOB_TOKEN) may read its datasets.": (
        "Só o token do próprio job (TREINO_JOB_TOKEN) pode ler os datasets dele."
    ),
    "job {job_id} did not declare dataset {name!r} at submit. To fix: list it under 'datasets:' in the job spec.": (
        "o job {job_id} não declarou o dataset {name!r} ao ser submetido. Como corrigir: liste-o em 'datasets:' na"
        " especificação do job."
    ),
    "Job {job_id} is {state}: only a running job reads its datasets.": (
        "O job {job_id} está {state}: só um job em execução lê seus datasets."
    ),
    (
        "Version {number} of {name} was erased (Art. 18 VI) after this job was admitted. To fix: resubmit the job; "
        "it will get the current version."
    ): (
        "A versão {number} de {name} foi eliminada (Art. 18 VI) depois que este job foi admitido. Como corrigir:"
        " submeta o job de novo; ele receberá a versão atual."
    ),
    "the job's owner {owner} is no longer an active user.": "o dono do job, {owner}, não é mais um usuário ativo.",
    (
        "Job {job_id} would log {total:,} distinct metric keys (it has {had:,}; this batch adds {added:,}, such as "
        "{example!r}); a job may log at most {max_keys:,}. To fix: log fewer distinct keys (a per-item value belongs "
        "in one key's series, not in the key's name)."
    ): (
        "O job {job_id} registraria {total:,} chaves de métrica distintas (tem {had:,}; este lote acrescenta"
        " {added:,}, como {example!r}); um job pode registrar no máximo {max_keys:,}. Como corrigir: registre menos"
        " chaves distintas (um valor por item vai na série de uma chave, não no nome da chave)."
    ),
    (
        "Model {model_id} is not marked by an erasure: quarantine and deletion are for models trained on an erased "
        "subject's data. To fix: see 'treino lineage model ID' for which models an erasure marked."
    ): (
        "O modelo {model_id} não foi marcado por uma eliminação: quarentena e exclusão são para modelos treinados com"
        " dados de um titular eliminado. Como corrigir: veja em 'treino lineage model ID' quais modelos uma"
        " eliminação marcou."
    ),
    "Model {model_id} was deleted by {deleted_by} (erasure #{erasure_id}): its files are gone.": (
        "O modelo {model_id} foi excluído por {deleted_by} (eliminação #{erasure_id}): seus arquivos não existem mais."
    ),
    (
        "model {model_id} is quarantined since {since} by {quarantined_by}: it was trained on data of a subject "
        "erased by erasure #{erasure_id} (LGPD Art. 18 VI). To fix: use the retrained model of that erasure (treino "
        "lineage models)."
    ): (
        "o modelo {model_id} está em quarentena desde {since} por {quarantined_by}: foi treinado com dados de um"
        " titular eliminado pela eliminação #{erasure_id} (LGPD Art. 18 VI). Como corrigir: use o modelo retreinado"
        " dessa eliminação (treino lineage models)."
    ),
    "Model {model_id}'s file is its job owner's and admins' only, not {name}'s.": (
        "O arquivo do modelo {model_id} é só do dono do job e dos admins, não de {name}."
    ),
    "Model {model_id} is not a file in its job's checkpoint folder. To fix: read it on the server.": (
        "O modelo {model_id} não é um arquivo na pasta de checkpoints do job. Como corrigir: leia-o no servidor."
    ),
    "Model {model_id} is a folder checkpoint, not one file. To fix: read it on the server.": (
        "O modelo {model_id} é um checkpoint em pasta, não um arquivo. Como corrigir: leia-o no servidor."
    ),
    (
        "Model {model_id} comes from job {job_id}, which is {state}: its checkpoints are still being written. To "
        "fix: cancel it first (treino cancel {job_id})."
    ): (
        "O modelo {model_id} vem do job {job_id}, que está {state}: seus checkpoints ainda estão sendo escritos. Como"
        " corrigir: cancele-o antes (treino cancel {job_id})."
    ),
    (
        "Model {model_id}'s checkpoints are where job {heir} continues from, and it has not ended. To fix: wait for "
        "job {heir} to end (or cancel it: treino cancel {heir}), then delete the model."
    ): (
        "Os checkpoints do modelo {model_id} são de onde o job {heir} continua, e ele não terminou. Como corrigir:"
        " espere o job {heir} terminar (ou cancele-o: treino cancel {heir}) e então exclua o modelo."
    ),
    "Model {model_id}'s file {path} is no longer on disk ({strerror}).": (
        "O arquivo {path} do modelo {model_id} não está mais no disco ({strerror})."
    ),
    "the month's GPU-hours are spent": "as GPU-horas do mês acabaram",
    "wait for the reset on {resets}": "espere a renovação em {resets}",
    (
        "this job may use up to {worst:.2f} more ({need} GPU(s) x timeout_minutes={timeout_minutes:g}), and "
        "{left:.2f} are left"
    ): (
        "este job pode usar até mais {worst:.2f} ({need} GPU(s) x timeout_minutes={timeout_minutes:g}), e restam"
        " {left:.2f}"
    ),
    "submit it with a shorter timeout_minutes or on fewer GPUs, or wait for the reset on {resets}": (
        "submeta-o com um timeout_minutes menor ou em menos GPUs, ou espere a renovação em {resets}"
    ),
    (
        "{user} has used {used:.2f} of {gpu_hours_month:g} GPU-hours this month ({set_for}): {what}. The quota "
        "resets on {resets}. To fix: {fix}, or ask an admin to raise it ({how})."
    ): (
        "{user} usou {used:.2f} de {gpu_hours_month:g} GPU-horas neste mês ({set_for}): {what}. A cota se renova em"
        " {resets}. Como corrigir: {fix}, ou peça a um admin para aumentá-la ({how})."
    ),
    (
        "the job asks for {need} GPU(s), but {user}'s quota ({set_for}) allows {concurrent_gpus} at once, so it "
        "could never start. To fix: ask for at most {concurrent_gpus} GPU(s), or ask an admin to raise "
        "concurrent_gpus ({how})."
    ): (
        "o job pede {need} GPU(s), mas a cota de {user} ({set_for}) permite {concurrent_gpus} ao mesmo tempo, então"
        " ele nunca poderia começar. Como corrigir: peça no máximo {concurrent_gpus} GPU(s), ou peça a um admin para"
        " aumentar concurrent_gpus ({how})."
    ),
    (
        "Job {job_id} is {state}: its checkpoints may still change. To fix: wait for it to end (or cancel it), or "
        "resubmit it with --from-scratch."
    ): (
        "O job {job_id} está {state}: seus checkpoints ainda podem mudar. Como corrigir: espere ele terminar (ou"
        " cancele-o), ou submeta-o de novo com --from-scratch."
    ),
    (
        "Job {job_id} left no checkpoint to continue from. To fix: resubmit it with --from-scratch (treino resubmit "
        "{job_id} --from-scratch)."
    ): (
        "O job {job_id} não deixou checkpoint de onde continuar. Como corrigir: submeta-o de novo com --from-scratch"
        " (treino resubmit {job_id} --from-scratch)."
    ),
    (
        "job {old_id}'s checkpoints were trained on {erased}, erased since (Art. 18 VI): continuing would carry the "
        "erased data into a new model. To fix: treino resubmit {old_id} --from-scratch."
    ): (
        "os checkpoints do job {old_id} foram treinados com {erased}, eliminado(s) desde então (Art. 18 VI):"
        " continuar levaria os dados eliminados a um novo modelo. Como corrigir: treino resubmit {old_id}"
        " --from-scratch."
    ),
    (
        "Dataset {name}'s retention period has not expired (it ends on {day}). To fix: erase subjects with 'treino "
        "erase', or wait until it expires."
    ): (
        "O prazo de retenção do dataset {name} não expirou (termina em {day}). Como corrigir: elimine titulares com"
        " 'treino erase', ou espere até que expire."
    ),
    (
        "Dataset {name}'s retention period has not expired (it has none). To fix: erase subjects with 'treino "
        "erase', or wait until it expires."
    ): (
        "O prazo de retenção do dataset {name} não expirou (ele não tem prazo). Como corrigir: elimine titulares com"
        " 'treino erase', ou espere até que expire."
    ),
    (
        "asks for {asked} nodes, but this server runs jobs on one machine. To fix: nodes: 1, or start the server on "
        "a Slurm cluster with 'treino server --backend slurm' (docs/cluster.md)."
    ): (
        "pede {asked} nós, mas este servidor roda jobs em uma só máquina. Como corrigir: nodes: 1, ou inicie o"
        " servidor em um cluster Slurm com 'treino server --backend slurm' (docs/cluster.md)."
    ),
    "asks for {asked} nodes but {inventory}. To fix: nodes <= {nodes}.": (
        "pede {asked} nós, mas {inventory}. Como corrigir: nodes <= {nodes}."
    ),
    "asks for {gpus} but this server has {per_node} ({inventory}). To fix: gpus <= {per_node}.": (
        "pede {gpus}, mas este servidor tem {per_node} ({inventory}). Como corrigir: gpus <= {per_node}."
    ),
    (
        "asks for {gpus} per node but a node has at most {per_node} ({inventory}). To fix: gpus <= {per_node}, and "
        "more nodes."
    ): (
        "pede {gpus} por nó, mas um nó tem no máximo {per_node} ({inventory}). Como corrigir: gpus <= {per_node}, e"
        " mais nós."
    ),
    (
        "asks for {asked} node(s) x {gpus} GPU(s), more than the partitions its data may be processed in "
        "({partitions}) have up now ({inventory}). To fix: fewer nodes or GPUs per node, or bring nodes of those "
        "partitions back (sinfo -R tells why they are down)."
    ): (
        "pede {asked} nó(s) x {gpus} GPU(s), mais do que as partições onde seus dados podem ser processados"
        " ({partitions}) têm no ar agora ({inventory}). Como corrigir: menos nós ou GPUs por nó, ou traga de volta nós"
        " dessas partições (sinfo -R diz por que estão fora)."
    ),
    (
        "{path} is over {kib} KiB; a job spec is a few lines. To fix: put large inputs in files the job reads, and "
        "their paths in the spec."
    ): (
        "{path} passa de {kib} KiB; uma especificação de job tem poucas linhas. Como corrigir: ponha entradas grandes"
        " em arquivos que o job lê, e os caminhos deles na especificação."
    ),
    "{path} must hold a mapping (name, script or command, gpus, ...), not {type_name}.": (
        "{path} precisa conter um mapeamento (name, script ou command, gpus, ...), não {type_name}."
    ),
    "Cannot read the job spec {path}: {strerror}. To fix: check the path.": (
        "Não foi possível ler a especificação do job {path}: {strerror}. Como corrigir: confira o caminho."
    ),
    "{path} is not valid {kind}: {exc}": "{path} não é {kind} válido: {exc}",
    "{path} is nested too deeply to be a job spec. To fix: write it as a flat mapping.": (
        "{path} tem aninhamento fundo demais para uma especificação de job. Como corrigir: escreva-a como um"
        " mapeamento plano."
    ),
    (
        "{path} would expand to over {max_values:,} values through its aliases (a 'billion laughs' file). To fix: "
        "write the values out instead of aliasing them."
    ): (
        "{path} se expandiria para mais de {max_values:,} valores pelos seus aliases (um arquivo 'billion laughs')."
        " Como corrigir: escreva os valores em vez de usar aliases."
    ),
    "Invalid job spec: {lines}.": "Especificação de job inválida: {lines}.",
    # a job spec's own checks (treino.server.spec), after its field's name
    "may not contain NUL bytes (\\x00)": "não pode conter bytes NUL (\\x00)",
    "is not valid Unicode ({reason} at character {start})": "não é Unicode válido ({reason} no caractere {start})",
    "is {size} bytes long; a path may have at most {most} (PATH_MAX)": (
        "tem {size} bytes; um caminho pode ter no máximo {most} (PATH_MAX)"
    ),
    "has a name of {longest} bytes; each name in a path may have at most {most} (NAME_MAX)": (
        "tem um nome de {longest} bytes; cada nome de um caminho pode ter no máximo {most} (NAME_MAX)"
    ),
    "is {size} bytes long; one argument may have at most {most} (MAX_ARG_STRLEN)": (
        "tem {size} bytes; um argumento pode ter no máximo {most} (MAX_ARG_STRLEN)"
    ),
    "the planner knows no {label} {value!r}. To fix: use one of {allowed}": (
        "o planejador não conhece {label} {value!r}. Como corrigir: use um de {allowed}"
    ),
    "no tracker {unknown}; treino writes to {known}. To fix: name some of those, or [] for none": (
        "não há tracker {unknown}; o treino escreve em {known}. Como corrigir: indique alguns deles, ou [] para nenhum"
    ),
    "{name!r} (did you mean {close!r}?)": "{name!r} (você quis dizer {close!r}?)",
    "names a tracker twice. To fix: name each once": "cita um tracker duas vezes. Como corrigir: cite cada um uma vez",
    "give exactly one of 'command' (an argv list) or 'script' (a Python file)": (
        "indique exatamente um de 'command' (uma lista argv) ou 'script' (um arquivo Python)"
    ),
    "'args' goes with 'script'; put a command's arguments in the 'command' list": (
        "'args' acompanha 'script'; ponha os argumentos de um comando na lista 'command'"
    ),
    "env may not set {names}: the server sets them": "env não pode definir {names}: o servidor as define",
    (
        "the command line and env take {size} bytes; at most {most} fit beside the server's own (the kernel's "
        "ARG_MAX). To fix: pass large inputs in a file and its path in args"
    ): (
        "a linha de comando e o env ocupam {size} bytes; cabem no máximo {most} ao lado dos do servidor (o ARG_MAX"
        " do kernel). Como corrigir: passe entradas grandes em um arquivo, e o caminho dele em args"
    ),
    "may not be blank: write it out": "não pode ficar em branco: escreva-o",
    "Extra inputs are not permitted.{hint} To fix: remove it, or use one of the keys {keys}.": (
        "Não são permitidos campos extras.{hint} Como corrigir: remova-o, ou use uma das chaves {keys}."
    ),
    "Extra inputs are not permitted.{hint} To fix: remove it, or use a key of {where}: {keys}.": (
        "Não são permitidos campos extras.{hint} Como corrigir: remova-o, ou use uma chave de {where}: {keys}."
    ),
    "The request body is over {size}. To fix: send less per request.": (
        "O corpo do pedido passa de {size}. Como corrigir: envie menos por pedido."
    ),
    (
        "{path} has more than {max_aliases} YAML aliases (*name), as a 'billion laughs' file has to expand to "
        "gigabytes. To fix: write the values out instead of aliasing them."
    ): (
        "{path} tem mais de {max_aliases} aliases YAML (*name), como um arquivo 'billion laughs' precisa ter para se"
        " expandir a gigabytes. Como corrigir: escreva os valores em vez de usar aliases."
    ),
    (
        "{path} nests lists and mappings more than {max_depth} deep; a job spec is 3 deep. To fix: write it as the "
        "flat mapping of treino.server.spec."
    ): (
        "{path} aninha listas e mapeamentos a mais de {max_depth} níveis; uma especificação de job tem 3. Como"
        " corrigir: escreva-a como o mapeamento plano de treino.server.spec."
    ),
    (
        "The Idempotency-Key {key!r} was sent with another job spec (job {job_id}) within the last {hours} h. To "
        "fix: send a new key with each new spec (treino submit does)."
    ): (
        "A Idempotency-Key {key!r} foi enviada com outra especificação de job (job {job_id}) nas últimas {hours} h."
        " Como corrigir: envie uma chave nova a cada especificação nova (treino submit faz isso)."
    ),
    "no partition of this cluster may process it: {detail}": (
        "nenhuma partição deste cluster pode processá-lo: {detail}"
    ),
    "unknown dataset {name!r}. To fix: see 'treino data list'.": (
        "dataset desconhecido {name!r}. Como corrigir: veja 'treino data list'."
    ),
    "the submitter has no user record to hold a grant on {name}.": (
        "quem submeteu não tem registro de usuário que possa ter uma concessão sobre {name}."
    ),
    "dataset {name} has no version with its bytes present.": (
        "o dataset {name} não tem versão com seus bytes presentes."
    ),
    (
        "the job's Python {python} failed to check the trackers' packages (exit {returncode}: {output}). To fix: "
        "check that Python, or drop 'trackers' from the spec."
    ): (
        "o Python do job, {python}, falhou ao verificar os pacotes dos trackers (saída {returncode}: {output}). Como"
        " corrigir: confira esse Python, ou tire 'trackers' da especificação."
    ),
    (
        "the job's Python {python} cannot import {packages}, which the tracker(s) {trackers} need. To fix: {pip} "
        "with that Python (\"pip install 'treino[trackers]'\" brings all three), or drop them from 'trackers'."
    ): (
        "o Python do job, {python}, não consegue importar {packages}, de que o(s) tracker(s) {trackers} precisa(m)."
        " Como corrigir: {pip} com esse Python (\"pip install 'treino[trackers]'\" traz os três), ou tire-os de"
        " 'trackers'."
    ),
    (
        "the job's Python {python} did not say within {timeout_s:g} s whether it has the trackers' packages "
        "({modules}). To fix: check that '{python} -c pass' starts, or drop 'trackers' from the spec."
    ): (
        "o Python do job, {python}, não disse em {timeout_s:g} s se tem os pacotes dos trackers ({modules}). Como"
        " corrigir: confira se '{python} -c pass' inicia, ou tire 'trackers' da especificação."
    ),
    (
        "cannot run the job's Python {python} to check the trackers' packages ({strerror}). To fix: install Python "
        "there (readable by the job's user), or drop 'trackers' from the spec."
    ): (
        "não foi possível rodar o Python do job, {python}, para verificar os pacotes dos trackers ({strerror}). Como"
        " corrigir: instale o Python lá (legível pelo usuário do job), ou tire 'trackers' da especificação."
    ),
    "must be a positive number of BRL, not {brl_per_gpu_hour}. To fix: e.g. 12.50.": (
        "precisa ser um número positivo de BRL, não {brl_per_gpu_hour}. Como corrigir: p. ex. 12.50."
    ),
    "Give --offer or --gpu-hour-brl, not both. To fix: drop one of them.": (
        "Informe --offer ou --gpu-hour-brl, não os dois. Como corrigir: retire um deles."
    ),
    "{text!r} is before 1970 or in the future. To fix: a past date, or e.g. 30d.": (
        "{text!r} é anterior a 1970 ou está no futuro. Como corrigir: uma data passada, ou p. ex. 30d."
    ),
    "{text!r} is neither a date nor a duration. To fix: e.g. 2026-11-01, 2026-11-01T08:00 or 30d.": (
        "{text!r} não é nem uma data nem uma duração. Como corrigir: p. ex. 2026-11-01, 2026-11-01T08:00 ou 30d."
    ),
    "Not logged in. To fix: log in at /login.": "Sessão não iniciada. Como corrigir: entre em /login.",
    "Job {job_id} has logged no metrics. To fix: log some with run.log(step, name=value).": (
        "O job {job_id} não registrou métricas. Como corrigir: registre algumas com run.log(step, name=value)."
    ),
    "{names} and {more} more": "{names} e mais {more}",
    (
        "Job {job_id} never logged a metric {key!r}. Did you mean {close!r}? It logged: {shown}. To fix: name one "
        "of those (treino metrics {job_id} lists them)."
    ): (
        "O job {job_id} nunca registrou uma métrica {key!r}. Você quis dizer {close!r}? Ele registrou: {shown}. Como "
        "corrigir: indique uma delas (treino metrics {job_id} as lista)."
    ),
    (
        "Job {job_id} never logged a metric {key!r}. It logged: {shown}. To fix: name one of those (treino metrics "
        "{job_id} lists them)."
    ): (
        "O job {job_id} nunca registrou uma métrica {key!r}. Ele registrou: {shown}. Como corrigir: indique uma delas "
        "(treino metrics {job_id} as lista)."
    ),
    (
        "The logs of job {job_id} are visible to {whom}, not to {name} ({role}). To fix: ask {owner} or an admin for "
        "them, or have the server started with --logs-visible-to all."
    ): (
        "Os logs do job {job_id} são visíveis para {whom}, não para {name} ({role}). Como corrigir: peça-os a {owner}"
        " ou a um admin, ou inicie o servidor com --logs-visible-to all."
    ),
    (
        "dataset {dataset} must stay in {residency} (LGPD Art. 33), but this server's site {site} ({city}) is in "
        "{country}, and no transfer mechanism is recorded for it. To fix: run the job on a site in {residency}, or "
        "record ANPD standard contractual clauses with 'treino transfer add --site {site} ...'."
    ): (
        "o dataset {dataset} precisa ficar em {residency} (LGPD Art. 33), mas o local deste servidor, {site} ({city}),"
        " fica em {country}, e nenhum mecanismo de transferência está registrado para ele. Como corrigir: rode o job"
        " em um local em {residency}, ou registre as cláusulas-padrão contratuais da ANPD com 'treino transfer add"
        " --site {site} ...'."
    ),
    (
        "{user} has no grant on dataset {dataset} for {purpose!r}. To fix: a DPO or admin runs 'treino grant {user} "
        "{dataset} --purpose {purpose}'."
    ): (
        "{user} não tem concessão sobre o dataset {dataset} para {purpose!r}. Como corrigir: um DPO ou admin roda"
        " 'treino grant {user} {dataset} --purpose {purpose}'."
    ),
    (
        "--logs-visible-to {spec!r}: {unknown} is not 'owner', 'all' or a role. To fix: give a comma-separated list "
        "of {known} (e.g. owner,admin,dpo)."
    ): (
        "--logs-visible-to {spec!r}: {unknown} não é 'owner', 'all' nem um papel. Como corrigir: dê uma lista"
        " separada por vírgulas de {known} (p. ex. owner,admin,dpo)."
    ),
    (
        "dataset {dataset} must stay in {residency}, and this server has no site configured. To fix: start the "
        "server with --site (e.g. --site eveo-sp1)."
    ): (
        "o dataset {dataset} precisa ficar em {residency}, e este servidor não tem local configurado. Como corrigir:"
        " inicie o servidor com --site (p. ex. --site eveo-sp1)."
    ),
    (
        "a job that reads dataset {dataset} must state its purpose (LGPD Art. 6 I). To fix: add 'purpose:' to the "
        "spec, one of {allowed}."
    ): (
        "um job que lê o dataset {dataset} precisa declarar sua finalidade (LGPD Art. 6 I). Como corrigir: acrescente"
        " 'purpose:' à especificação, uma de {allowed}."
    ),
    (
        "dataset {dataset} was collected for {allowed}, not {purpose!r} (LGPD Art. 6 I, purpose limitation). To fix: "
        "use an allowed purpose, or register a new legal basis."
    ): (
        "o dataset {dataset} foi coletado para {allowed}, não para {purpose!r} (LGPD Art. 6 I, limitação da"
        " finalidade). Como corrigir: use uma finalidade permitida, ou registre uma nova base legal."
    ),
    "nobody": "ninguém",
    "Dataset '{name}' has no version {number} (it has v1 to v{last}).": (
        "O dataset '{name}' não tem a versão {number} (tem de v1 a v{last})."
    ),
    (
        "a dataset needs a legal basis for its processing (Art. 7; Art. 11 for sensitive data). To fix: pass one of "
        "{bases} (or not-personal for data about no one)."
    ): (
        "um dataset precisa de uma base legal para seu tratamento (Art. 7; Art. 11 para dados sensíveis). Como"
        " corrigir: informe uma de {bases} (ou not-personal para dados que não são de ninguém)."
    ),
    "sensitive data is personal data by definition. To fix: flag the dataset as personal data too.": (
        "dados sensíveis são dados pessoais por definição. Como corrigir: marque o dataset também como dados pessoais."
    ),
    (
        "the dataset is flagged as personal data, so 'not-personal' is no legal basis for it. To fix: pass one of "
        "{bases}."
    ): (
        "o dataset está marcado como dados pessoais, então 'not-personal' não é base legal para ele. Como corrigir:"
        " informe uma de {bases}."
    ),
    (
        "{label} does not cover sensitive data; Art. 11 has its own, narrower list. To fix: use {basis} "
        "({basis_label})."
    ): (
        "{label} não cobre dados sensíveis; o Art. 11 tem sua própria lista, mais restrita. Como corrigir: use"
        " {basis} ({basis_label})."
    ),
    (
        "{label} is not available for sensitive data (only Art. 11 bases are). To fix: choose one of {bases}, if one "
        "truly applies, or drop the sensitive columns."
    ): (
        "{label} não está disponível para dados sensíveis (só as bases do Art. 11 estão). Como corrigir: escolha uma"
        " de {bases}, se uma realmente se aplicar, ou retire as colunas sensíveis."
    ),
    # the legal bases (treino.govern.datasets.BASIS_LABELS), in the words of the LGPD's own text
    "Art. 7 I: consent of the data subject": "Art. 7 I: consentimento do titular",
    "Art. 7 II: legal or regulatory obligation": "Art. 7 II: cumprimento de obrigação legal ou regulatória",
    "Art. 7 III: public administration, for public policies": (
        "Art. 7 III: administração pública, para a execução de políticas públicas"
    ),
    "Art. 7 IV: studies by a research body": "Art. 7 IV: realização de estudos por órgão de pesquisa",
    "Art. 7 V: performance of a contract": "Art. 7 V: execução de contrato",
    "Art. 7 VI: exercise of rights in judicial, administrative or arbitral proceedings": (
        "Art. 7 VI: exercício regular de direitos em processo judicial, administrativo ou arbitral"
    ),
    "Art. 7 VII: protection of life or physical safety": "Art. 7 VII: proteção da vida ou da incolumidade física",
    "Art. 7 VIII: health protection, by health professionals or services": (
        "Art. 7 VIII: tutela da saúde, por profissionais de saúde ou serviços de saúde"
    ),
    "Art. 7 IX: legitimate interest of the controller or a third party": (
        "Art. 7 IX: interesse legítimo do controlador ou de terceiro"
    ),
    "Art. 7 X: credit protection": "Art. 7 X: proteção do crédito",
    "Art. 11 I: specific and highlighted consent, for specific purposes": (
        "Art. 11 I: consentimento específico e destacado, para finalidades específicas"
    ),
    "Art. 11 II a: legal or regulatory obligation": "Art. 11 II a: cumprimento de obrigação legal ou regulatória",
    "Art. 11 II b: public administration, for public policies": (
        "Art. 11 II b: administração pública, para a execução de políticas públicas"
    ),
    "Art. 11 II c: studies by a research body": "Art. 11 II c: realização de estudos por órgão de pesquisa",
    "Art. 11 II d: exercise of rights, including in contracts and proceedings": (
        "Art. 11 II d: exercício regular de direitos, inclusive em contrato e em processo"
    ),
    "Art. 11 II e: protection of life or physical safety": "Art. 11 II e: proteção da vida ou da incolumidade física",
    "Art. 11 II f: health protection, by health professionals or services": (
        "Art. 11 II f: tutela da saúde, por profissionais de saúde ou serviços de saúde"
    ),
    "Art. 11 II g: fraud prevention and the subject's security in identification": (
        "Art. 11 II g: prevenção à fraude e segurança do titular, na identificação"
    ),
    "no personal data (Art. 5 I): the LGPD does not apply": "sem dados pessoais (Art. 5 I): a LGPD não se aplica",
    (
        "processing needs legitimate, specific and explicit purposes (purpose principle). To fix: name at least one "
        "purpose, e.g. --purpose churn-model."
    ): (
        "o tratamento precisa de finalidades legítimas, específicas e explícitas (princípio da finalidade). Como"
        " corrigir: indique ao menos uma finalidade, p. ex. --purpose churn-model."
    ),
    "Residency '{residency}' is neither an ISO 3166-1 alpha-2 country code nor 'any'. To fix: e.g. BR.": (
        "A residência '{residency}' não é um código de país ISO 3166-1 alfa-2 nem 'any'. Como corrigir: p. ex. BR."
    ),
    "Retention of {retention_days} days: it must be a positive number of days, or none.": (
        "Retenção de {retention_days} dias: precisa ser um número positivo de dias, ou nenhum."
    ),
    (
        "{target} is outside the allowed import roots: {shown}. To fix: copy the file under one of them, or ask an "
        "admin to add its directory as an import root."
    ): (
        "{target} está fora das raízes de importação permitidas: {shown}. Como corrigir: copie o arquivo para dentro"
        " de uma delas, ou peça a um admin para acrescentar o diretório dele como raiz de importação."
    ),
    "(none configured)": "(nenhuma configurada)",
    "{path} (resolves to {resolved})": "{path} (que aponta para {resolved})",
    "No such file: {path}. To fix: check the path (it is read on the server).": (
        "Arquivo inexistente: {path}. Como corrigir: confira o caminho (ele é lido no servidor)."
    ),
    "Unknown dataset format '{suffix}' ({file}). To fix: use .parquet, .csv or .jsonl.": (
        "Formato de dataset desconhecido '{suffix}' ({file}). Como corrigir: use .parquet, .csv ou .jsonl."
    ),
    (
        "this content (sha256 {sha}…) was purged from the store by an erasure; importing it again would restore "
        "erased subjects' data. To fix: import the data without the erased subjects' rows."
    ): (
        "este conteúdo (sha256 {sha}…) foi expurgado do armazenamento por uma eliminação; importá-lo de novo"
        " restauraria dados de titulares eliminados. Como corrigir: importe os dados sem as linhas dos titulares"
        " eliminados."
    ),
    (
        "Unknown dataset '{name}'. {hint}See 'treino data list'."
    ): "Dataset desconhecido '{name}'. {hint}Veja 'treino data list'.",
    "Dataset '{name}' has no versions.": "O dataset '{name}' não tem versões.",
    "Dataset name '{name}': use lowercase letters, digits, '.', '_' and '-' (at most 100).": (
        "Nome de dataset '{name}': use letras minúsculas, dígitos, '.', '_' e '-' (no máximo 100)."
    ),
    "Dataset '{name}' exists. To fix: add a version of it, or pick another name.": (
        "O dataset '{name}' já existe. Como corrigir: acrescente uma versão dele, ou escolha outro nome."
    ),
    "unknown legal basis '{legal_basis}'. {hint}To fix: use one of {bases}.": (
        "base legal desconhecida '{legal_basis}'. {hint}Como corrigir: use uma de {bases}."
    ),
    "Cannot read {path} as {fmt}: {e}. To fix: check the file's format.": (
        "Não foi possível ler {path} como {fmt}: {e}. Como corrigir: confira o formato do arquivo."
    ),
    "Subject column '{subject_column}' is not in {file} (columns: {columns}).{hint}": (
        "A coluna de titular '{subject_column}' não está em {file} (colunas: {columns}).{hint}"
    ),
    (
        "dataset {dataset}'s retention period ({days} days) expired on {day}; it may no longer be read (LGPD Art. "
        "15-16). To fix: a DPO extends it with a documented legal basis (treino data retain {dataset} --days N "
        "--legal-basis BASIS --reason TEXT), or erases it (treino data retain {dataset} --erase)."
    ): (
        "o prazo de retenção do dataset {dataset} ({days} dias) expirou em {day}; ele não pode mais ser lido (LGPD"
        " Art. 15-16). Como corrigir: um DPO o estende com uma base legal documentada (treino data retain {dataset}"
        " --days N --legal-basis BASIS --reason TEXT), ou o elimina (treino data retain {dataset} --erase)."
    ),
    "Retention of {days} days: it must be a positive number of days. To fix: e.g. --days 365.": (
        "Retenção de {days} dias: precisa ser um número positivo de dias. Como corrigir: p. ex. --days 365."
    ),
    (
        "keeping data past its retention period needs a documented legal basis and reason. To fix: pass "
        "--legal-basis (e.g. 'Art. 16 I: legal obligation') and --reason."
    ): (
        "manter dados além do prazo de retenção precisa de uma base legal e de um motivo documentados. Como corrigir:"
        " informe --legal-basis (p. ex. 'Art. 16 I: obrigação legal') e --reason."
    ),
    "Did you mean '{name}'? ": "Você quis dizer '{name}'? ",
    " Did you mean '{name}'?": " Você quis dizer '{name}'?",
    # the failure details treino words (treino.server.failures)
    "the attempt's supervisor vanished without an exit status (crash or reboot)": (
        "o supervisor da tentativa sumiu sem código de saída (queda ou reinício)"
    ),
    "the attempt's supervisor vanished without an exit status": "o supervisor da tentativa sumiu sem código de saída",
    "(hidden: it quotes the job's log, which your role may not read)": (
        "(oculto: cita o log do job, que seu papel não pode ler)"
    ),
    "killed by signal {signal}": "morto pelo sinal {signal}",
    "exit code {code}": "código de saída {code}",
    "ran past timeout_minutes={minutes}": "passou de timeout_minutes={minutes}",
    # the audit chain's verdicts (treino.govern.audit.verify, treino.govern.anchors.check)
    "record {seq}: {reason}": "registro {seq}: {reason}",
    "record {n} is missing before it (deleted, or the log renumbered)": (
        "o registro {n} falta antes dele (apagado, ou o log foi renumerado)"
    ),
    "records {first}-{last} are missing before it (deleted, or the log renumbered)": (
        "os registros {first}-{last} faltam antes dele (apagados, ou o log foi renumerado)"
    ),
    "previous hash does not match the genesis hash (deleted, inserted or reordered)": (
        "o hash anterior não confere com o hash gênese (apagado, inserido ou reordenado)"
    ),
    "previous hash does not match record {prev} (deleted, inserted or reordered)": (
        "o hash anterior não confere com o registro {prev} (apagado, inserido ou reordenado)"
    ),
    "its hash does not match its content (modified)": "seu hash não confere com seu conteúdo (modificado)",
    "its signed checkpoint (one every {every} records) is missing": (
        "falta seu checkpoint assinado (um a cada {every} registros)"
    ),
    "checkpoint #{cp_id}'s HMAC does not verify (forged, or signed with another key)": (
        "o HMAC do checkpoint #{cp_id} não confere (forjado, ou assinado com outra chave)"
    ),
    (
        "its hash is not the one checkpoint #{cp_id} signed: the chain was rewritten after record {good} "
        "(records {first}-{seq}), by someone without the key"
    ): (
        "seu hash não é o que o checkpoint #{cp_id} assinou: a cadeia foi reescrita depois do registro {good} "
        "(registros {first}-{seq}), por alguém sem a chave"
    ),
    "missing: checkpoint #{cp_id} signed record {beyond}, but the log ends at record {last} (tail deleted)": (
        "faltando: o checkpoint #{cp_id} assinou o registro {beyond}, mas o log termina no registro {last} (final "
        "apagado)"
    ),
    "checkpoint #{cp_id} names this record, which cannot exist": (
        "o checkpoint #{cp_id} cita este registro, que não pode existir"
    ),
    (
        "record {seq}: the database is corrupt, reading the audit log failed after {n:,} intact records ({error}). "
        "To fix: restore the database from a backup; 'treino server' checks it at start and says how"
    ): (
        "registro {seq}: o banco de dados está corrompido, a leitura do log de auditoria falhou após {n:,} registros "
        "íntegros ({error}). Como corrigir: restaure o banco de dados de um backup; 'treino server' o verifica ao "
        "iniciar e diz como"
    ),
    "anchor at line {line}: its HMAC does not verify (not written by this server)": (
        "âncora na linha {line}: seu HMAC não confere (não foi escrita por este servidor)"
    ),
    "record {seq}: the chain does not link here; run 'treino audit verify' for why": (
        "registro {seq}: a cadeia não se encadeia aqui; rode 'treino audit verify' para saber por quê"
    ),
    (
        "anchor at line {line} ({reason}, {when}) names record {seq}, but the log ends at record {n}: records were "
        "deleted after it was written"
    ): (
        "a âncora na linha {line} ({reason}, {when}) cita o registro {seq}, mas o log termina no registro {n}: "
        "registros foram apagados depois que ela foi escrita"
    ),
    (
        "anchor at line {line} ({reason}, {when}) disagrees: record {seq}'s hash is now {got}..., the anchor holds "
        "{held}...: a record up to {seq} was changed after {when}, and the chain was rewritten consistently (by "
        "someone holding the database and the key)"
    ): (
        "a âncora na linha {line} ({reason}, {when}) discorda: o hash do registro {seq} agora é {got}..., a âncora "
        "guarda {held}...: um registro até o {seq} foi alterado depois de {when}, e a cadeia foi reescrita de forma "
        "consistente (por alguém com o banco de dados e a chave)"
    ),
    "interval": "intervalo",
    "shutdown": "desligamento",
    "its owner ({owner})": "seu dono ({owner})",
    "roles {roles}": "os papéis {roles}",
    "{a} and {b}": "{a} e {b}",
    # the server's refusals as the CLI shows them (treino.cli.client._http_error)
    "grant": "concessão",  # a PolicyViolation's rule, as "recusado (concessão): ..."
    "import roots": "raízes de importação",
    "The server refused {what} ({status}):\n{lines}": "O servidor recusou {what} ({status}):\n{lines}",
    "refused ({rule}): {message}": "recusado ({rule}): {message}",
    "the request": "o pedido",
    "the job spec": "a especificação do job",
    "the job spec {path}": "a especificação do job {path}",
    "the erasure": "a eliminação",
    "the subject report": "o relatório do titular",
    "the usage": "o uso",
    "the quota": "a cota",
    "the quotas": "as cotas",
    "the user {name}": "o usuário {name}",
    "the token for {user}": "o token de {user}",
    "the grant of {dataset} to {user}": "a concessão de {dataset} a {user}",
    "the transfer to {site}": "a transferência para {site}",
    "the dataset {name}": "o dataset {name}",
    "the audit export": "a exportação da auditoria",
    # the governance commands (treino.cli.govern): users, tokens, grants, transfer, data, audit, lineage, erase, subject
    "Added user {name} ({role}), id {id}.": "Usuário {name} ({role}) adicionado, id {id}.",
    "{n} user(s)": "{n} usuário(s)",
    "disabled": "desativado",
    "User {name} ({role}) disabled: every token of theirs now fails.": (
        "Usuário {name} ({role}) desativado: todos os tokens dele falham a partir de agora."
    ),
    "User {name} ({role}) enabled: their tokens work again.": (
        "Usuário {name} ({role}) reativado: os tokens dele voltam a funcionar."
    ),
    "Token {id} for {user} ({role}), expires {when}:": "Token {id} para {user} ({role}), vence em {when}:",
    "Token {id} for {user} ({role}), no expiry:": "Token {id} para {user} ({role}), sem validade:",
    "This is the only time the token is shown; store it now (the server keeps only its hash).": (
        "Esta é a única vez que o token aparece; guarde-o agora (o servidor guarda só o seu hash)."
    ),
    "{n} token(s)": "{n} token(s)",
    "created": "criado",
    "expires": "vence",
    "revoked": "revogado",
    "Revoked token {id} at {when}.": "Token {id} revogado em {when}.",
    "Grant {id}: {user} may read {dataset} for {purposes}.": (
        "Permissão {id}: {user} pode ler {dataset} para {purposes}."
    ),
    "{n} grant(s)": "{n} permissão(ões)",
    "purposes": "finalidades",
    "granted by": "concedida por",
    "Revoked grant {id} at {when}.": "Permissão {id} revogada em {when}.",
    "Transfer {id}: {site} under {mechanism} ({reference}, signed {signed_on}).": (
        "Transferência {id}: {site} sob {mechanism} ({reference}, assinado em {signed_on})."
    ),
    "{n} transfer(s)": "{n} transferência(s)",
    "mechanism": "mecanismo",
    "reference": "referência",
    "signed on": "assinado em",
    "Registered {name} v{number}: sha256 {sha256}, {rows:,} rows.": (
        "{name} v{number} registrado: sha256 {sha256}, {rows:,} linhas."
    ),
    "warning: {text}": "aviso: {text}",
    "{n} dataset(s)": "{n} dataset(s)",
    "basis": "base",
    "retention": "retenção",
    "personal data": "dados pessoais",
    "yes, sensitive": "sim, sensíveis",
    "subject column": "coluna de titulares",
    "registered": "registrado",
    "{when} by {who}": "{when} por {who}",
    "Dataset {name} ({format})": "Dataset {name} ({format})",
    "{days} d, EXPIRED": "{days} d, VENCIDA",
    "EXPIRED on {date}": "VENCIDA em {date}",
    "{days} d": "{days} d",
    "{days} days, until {date}": "{days} dias, até {date}",
    "Erased {name}: version(s) {purged} purged (erasure #{erasure}).": (
        "{name} eliminado: versão(ões) {purged} expurgada(s) (eliminação nº {erasure})."
    ),
    "Retention of {name} extended until {date}.": "Retenção de {name} prorrogada até {date}.",
    "reason": "motivo",
    "purged {when}": "expurgada em {when}",
    "current": "atual",
    "kept": "mantida",
    "chain intact: {n:,} records; {reason}.": "cadeia íntegra: {n:,} registros; {reason}.",
    "anchors: {reason}.": "âncoras: {reason}.",
    "anchors: {reason} (anchor HMACs not checked: --key-file).": (
        "âncoras: {reason} (HMACs das âncoras não conferidos: --key-file)."
    ),
    "chain broken at record {seq}:": "cadeia rompida no registro {seq}:",
    "{n} record(s)": "{n} registro(s)",
    "Wrote {what} to {path}.": "Gravado em {path}: {what}.",
    "the processing records (Art. 37)": "o registro das operações de tratamento (Art. 37)",
    "{name}: {versions} version(s), {reads} recorded read(s)": (
        "{name}: {versions} versão(ões), {reads} leitura(s) registrada(s)"
    ),
    "models": "modelos",
    " (erasure #{id})": " (eliminação nº {id})",
    "Model {id} ({kind}, step {step}) of job {job} ({job_name})": (
        "Modelo {id} ({kind}, passo {step}) do job {job} ({job_name})"
    ),
    "path: {path}": "caminho: {path}",
    "personal data: {personal}; residency: {residency}": "dados pessoais: {personal}; residência: {residency}",
    "affected by erasure #{id}": "afetado pela eliminação nº {id}",
    "deleted {when} by {who}: its files are gone": "apagado em {when} por {who}: seus arquivos não existem mais",
    "quarantined {when} by {who}: not served": "em quarentena desde {when} por {who}: não é servido",
    "trained on": "treinado com",
    "{n} model(s), {affected} affected by erasure": "{n} modelo(s), {affected} afetado(s) por eliminação",
    "Model {id} quarantined by {who}: its file is no longer served.": (
        "Modelo {id} posto em quarentena por {who}: seu arquivo deixa de ser servido."
    ),
    "Model {id} deleted by {who}: its files and job {job}'s checkpoints gone.": (
        "Modelo {id} apagado por {who}: seus arquivos e os checkpoints do job {job} foram removidos."
    ),
    "Erasure #{id} of subject {subject} (pseudonym {pseudonym})": (
        "Eliminação nº {id} do titular {subject} (pseudônimo {pseudonym})"
    ),
    "answer due by {date} (LGPD Art. 19: {days} days)": "resposta devida até {date} (LGPD Art. 19: {days} dias)",
    "no records in the {n} searched dataset(s) ({searched}); nothing erased": (
        "nenhum registro no(s) {n} dataset(s) pesquisado(s) ({searched}); nada eliminado"
    ),
    "{dataset}: {rows} row(s) removed; purged {purged}; new version {new}": (
        "{dataset}: {rows} linha(s) removida(s); expurgadas {purged}; nova versão {new}"
    ),
    "models marked: {ids}": "modelos marcados: {ids}",
    "retrain jobs queued: {ids}": "jobs de retreino na fila: {ids}",
    "jobs that read the erased versions: {ids} (--retrain queues them)": (
        "jobs que leram as versões eliminadas: {ids} (--retrain os põe na fila)"
    ),
    "not searchable (no subject column): {names}": "sem busca possível (sem coluna de titulares): {names}",
    "Subject {subject} (pseudonym {pseudonym}): {when}": "Titular {subject} (pseudônimo {pseudonym}): {when}",
    "held in": "guardado em",
    "granted to": "concedido a",
    "model #{id} ({kind}) of job #{job}": "modelo nº {id} ({kind}) do job nº {job}",
    "erasure #{id} requested {when}, due {date}": "eliminação nº {id} pedida em {when}, prazo {date}",
    "  memorisation check, job #{job}: loss gap erased - held-out rows {sides}": (
        "  teste de memorização, job nº {job}: diferença de loss entre linhas eliminadas e linhas de controle {sides}"
    ),
    # treino metrics, show --metric, resubmit (treino.cli.metrics, treino.cli.resubmit)
    "Job {id} has logged no metrics yet.": "O job {id} ainda não registrou métricas.",
    "job {id}: {n} metric key(s)": "job {id}: {n} chave(s) de métrica",
    "curve": "curva",
    "One key: treino show {id} --metric NAME · every point: treino metrics {id} --csv": (
        "Uma chave: treino show {id} --metric NOME · todos os pontos: treino metrics {id} --csv"
    ),
    "Job {id}: {key}, {n} point(s), steps {first}..{last}": "Job {id}: {key}, {n} ponto(s), passos {first}..{last}",
    " (shown: {n}, each stretch's min and max)": " (mostrados: {n}, o mín. e o máx. de cada trecho)",
    "last {value} (step {step})": "último {value} (passo {step})",
    "min {value} (step {step})": "mín. {value} (passo {step})",
    "max {value} (step {step})": "máx. {value} (passo {step})",
    (
        "Submitted job {id} ({name}): it continues job {job} from its checkpoint of step {step}. Watch it with 'treino "
        "show {id}'."
    ): (
        "Job {id} ({name}) enviado: continua o job {job} do seu checkpoint do passo {step}. Acompanhe com 'treino show "
        "{id}'."
    ),
    "Submitted job {id} ({name}): it runs job {job}'s spec again from step 0. Watch it with 'treino show {id}'.": (
        "Job {id} ({name}) enviado: roda de novo a especificação do job {job} a partir do passo 0. Acompanhe com "
        "'treino show {id}'."
    ),
    # progress bars' titles and step names (treino.cli.progress)
    "bench": "medição",
    "recommend": "recomendação",
    "train step": "passo de treino",
    "device": "dispositivo",
    "step {n}/{total}": "passo {n}/{total}",
    "planning {n} offers": "planejando {n} ofertas",
    "loading matplotlib": "carregando o matplotlib",
    "pricing the offers outside the limits": "precificando as ofertas fora dos limites",
    "plotting memory per GPU": "desenhando a memória por GPU",
    "plotting scaling": "desenhando a escalabilidade",
    "plotting cost": "desenhando o custo",
    "plotting cost against time": "desenhando o custo contra o tempo",
    "training step 1 (creates the optimizer state)": "passo de treino 1 (cria o estado do otimizador)",
    "training step 2, measured with MemTracker": "passo de treino 2, medido com o MemTracker",
    "importing PyTorch and transformers": "importando o PyTorch e o transformers",
    "building the model on fake tensors": "construindo o modelo em tensores falsos",
    "building {spec} on fake tensors": "construindo {spec} em tensores falsos",
    "gpu": "GPU",
    "collectives": "coletivas",
    "host": "host",
    "dataloader": "data loader",
    # why a job waits, in one sentence (treino.cli.job_status.wait_detail) and a quota's note (treino.server.quotas)
    "needs {n} device(s), {free} free": "precisa de {n} dispositivo(s), {free} livre(s)",
    " and {n} more": " e mais {n}",
    "held by a quota: {note}": "retido por uma cota: {note}",
    "{need}; preempting {jobs} to free them": "{need}; preemptando {jobs} para liberá-los",
    "needs {n} device(s): the machines it may use cannot seat it now (nodes down)": (
        "precisa de {n} dispositivo(s): as máquinas que ele pode usar não o comportam agora (nós fora do ar)"
    ),
    "{need}; held by {jobs}, expected free at {at}": "{need}; ocupados por {jobs}, previstos livres em {at}",
    "{need}; held by {jobs}, free time unknown (they have no timeout)": (
        "{need}; ocupados por {jobs}, sem previsão de liberação (não têm timeout)"
    ),
    "fits now, but {head} waits first and its start time is unknown (no timeout)": (
        "cabe agora, mas o {head} espera antes e seu início não tem previsão (sem timeout)"
    ),
    "fits now, but would delay {head}, due to start at {at}; a timeout_minutes ending sooner lets it in": (
        "cabe agora, mas atrasaria o {head}, com início previsto em {at}; um timeout_minutes que termine antes disso o "
        "deixa entrar"
    ),
    "{head}, of higher priority, goes first; {need}": "{head}, de prioridade maior, vai antes; {need}",
    "{head}, submitted earlier, goes first; {need}": "{head}, enviado antes, vai primeiro; {need}",
    "pending in Slurm: {note}": "aguardando no Slurm: {note}",
    "no reason given": "sem motivo informado",
    "the backend cannot be reached: {note}": "o backend está inacessível: {note}",
    "the backend cannot be reached": "o backend está inacessível",
    (
        "quota: {owner}'s jobs hold {held} of the {limit} GPU(s) their quota allows at once ({whose}); this job needs "
        "{need}. It starts when enough of them end."
    ): (
        "cota: os jobs de {owner} ocupam {held} das {limit} GPU(s) que sua cota permite ao mesmo tempo ({whose}); este "
        "job precisa de {need}. Ele começa quando jobs suficientes terminarem."
    ),
    (
        "quota: {owner}'s {hours:g} GPU-hours of this month are spent ({whose}). It starts when the quota resets, "
        "{resets}."
    ): (
        "cota: as {hours:g} GPU-horas de {owner} neste mês se esgotaram ({whose}). Ele começa quando a cota renovar, "
        "em {resets}."
    ),
    # treino bench: its table and verdicts (treino.bench.report)
    "Figure": "Medida",
    "Measured": "Medido",
    "Datasheet": "Ficha técnica",
    "% of datasheet": "% da ficha técnica",
    "GPU {index} {name}": "GPU {index} {name}",
    "{label} memory": "{label}: memória",
    "{n:.1f} GB": "{n:.1f} GB",
    "{label} device copy (read+write)": "{label}: cópia no dispositivo (leitura+escrita)",
    "{n:,.0f} GB/s": "{n:,.0f} GB/s",
    "{n:.1f} GB/s": "{n:.1f} GB/s",
    "{n:.2f} GB/s": "{n:.2f} GB/s",
    "{n:,.0f} TFLOP/s sustained": "{n:,.0f} TFLOP/s sustentados",
    "{n:,.0f} TFLOP/s sustained at {clock:,} MHz": "{n:,.0f} TFLOP/s sustentados a {clock:,} MHz",
    "{n:,.0f} burst": "{n:,.0f} em pico",
    "{label} matmul {dtype}": "{label}: matmul {dtype}",
    "{label} -> GPU {peer} P2P": "{label} -> GPU {peer} P2P",
    "{op} latency {size} ({backend}, {ranks} ranks)": "{op} latência {size} ({backend}, {ranks} ranks)",
    "{op} busbw {size} ({backend}, {ranks} ranks)": "{op} busbw {size} ({backend}, {ranks} ranks)",
    "{n:,.0f} µs": "{n:,.0f} µs",
    "CPU cores": "Núcleos de CPU",
    "Host memory copy (read+write)": "Cópia na memória do host (leitura+escrita)",
    "Storage sequential read ({method})": "Leitura sequencial do armazenamento ({method})",
    "7 GB/s (NVMe criterion)": "7 GB/s (critério NVMe)",
    "Data loader": "Data loader",
    "{n:,.0f} samples/s ({workers} workers)": "{n:,.0f} amostras/s ({workers} workers)",
    "larger than RAM": "maior que a RAM",
    "buffered (cached)": "com buffer (em cache)",
    "PASS": "OK",
    "FAIL": "FALHA",
    "NOTE": "OBS.",
    "meets": "atinge o mínimo de",
    "below": "abaixo do mínimo de",
    "feeds": "alimenta",
    "short of": "não alcança",
    "{per:g} CPU cores per GPU: {verdict} the {min} per GPU that keep the data loaders and the training process fed.": (
        "{per:g} núcleos de CPU por GPU: {verdict} {min} por GPU, que mantêm os data loaders e o processo de treino "
        "alimentados."
    ),
    "{per:.0f} GB RAM per GPU: {verdict} the {min} GB per GPU.": (
        "{per:.0f} GB de RAM por GPU: {verdict} {min} GB por GPU."
    ),
    (
        "No GPUs here: {cores} cores and {ram:.0f} GB RAM would feed {fed} GPU(s) at {min_cores} cores and "
        "{min_ram} GB per GPU (the sizing criteria of docs/catalog.md)."
    ): (
        "Sem GPUs aqui: {cores} núcleos e {ram:.0f} GB de RAM alimentariam {fed} GPU(s), a {min_cores} núcleos e "
        "{min_ram} GB por GPU (os critérios de dimensionamento de docs/catalog.md)."
    ),
    (
        "Storage {read:.1f} GB/s was read through the page cache: not judged against {min:g} GB/s. To fix: --path on a "
        "filesystem that allows O_DIRECT."
    ): (
        "O armazenamento ({read:.1f} GB/s) foi lido pelo cache de páginas: não é julgado contra {min:g} GB/s. Como "
        "corrigir: --path num sistema de arquivos que permita O_DIRECT."
    ),
    "Storage {read:.2f} GB/s ({method}): {verdict} the {min:g} GB/s that keeps 8 GPUs fed on image and video data.": (
        "Armazenamento {read:.2f} GB/s ({method}): {verdict} {min:g} GB/s, que mantém 8 GPUs alimentadas com dados de "
        "imagem e vídeo."
    ),
    "All-reduce of random data over {ranks} {backend} ranks equals the sum computed locally (max error {err:.1e}).": (
        "O all-reduce de dados aleatórios em {ranks} ranks {backend} é igual à soma calculada localmente (erro máximo "
        "{err:.1e})."
    ),
    (
        "All-reduce of random data over {ranks} {backend} ranks DIFFERS from the sum computed locally (max error "
        "{err:.1e})."
    ): (
        "O all-reduce de dados aleatórios em {ranks} ranks {backend} DIFERE da soma calculada localmente (erro máximo "
        "{err:.1e})."
    ),
    (
        "Data loader {rate:,.0f} samples/s with {workers} worker(s): {verdict} {feed:,.0f} samples/s; about {need} "
        "worker(s) needed at one worker's rate."
    ): (
        "Data loader {rate:,.0f} amostras/s com {workers} worker(s): {verdict} {feed:,.0f} amostras/s; cerca de {need} "
        "worker(s) necessário(s) à taxa de um worker."
    ),
    "gpu: skipped, no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False).": (
        "gpu: pulada, nenhuma GPU CUDA visível para o PyTorch (torch.cuda.is_available() é False)."
    ),
    "Profile: {path} (use it with 'treino plan train --profile {path}').": (
        "Perfil: {path} (use-o com 'treino plan train --profile {path}')."
    ),
    # treino server's start-up and stop lines (treino.cli.server), the usage price's basis (treino.server.usage)
    "warning": "aviso",
    "node {node} is in partitions mapped to different sites ({sites}); residency is decided per partition.": (
        "o nó {node} está em partições mapeadas para locais diferentes ({sites}); a residência é decidida por partição."
    ),
    "Slurm: checking that {path} is shared with the nodes (a 1-node job) ...": (
        "Slurm: conferindo se {path} é compartilhado com os nós (um job de 1 nó) ..."
    ),
    "Deleted {n} dataset file(s) an interrupted erasure or import had left in the store.": (
        "Apagado(s) {n} arquivo(s) de dataset que uma eliminação ou importação interrompida deixou no repositório."
    ),
    "treino server: {devices}; data in {path}": "treino server: {devices}; dados em {path}",
    (
        "Reconciled after restart: {adopted} job(s) adopted, {requeued} requeued, {finished} finished while the server "
        "was down."
    ): (
        "Reconciliado após o reinício: {adopted} job(s) adotado(s), {requeued} de volta à fila, {finished} "
        "terminado(s) enquanto o servidor estava fora do ar."
    ),
    "Partition {name}: site {site} ({city}, {country})": "Partição {name}: local {site} ({city}, {country})",
    "Partition {name}: no site": "Partição {name}: sem local",
    "Site: {name} ({city}, {country}, {provider})": "Local: {name} ({city}, {country}, {provider})",
    "Site: none (--site): jobs on datasets with a residency are refused": (
        "Local: nenhum (--site): jobs com datasets que têm residência são recusados"
    ),
    "Usage priced at: {basis}": "Uso precificado a: {basis}",
    "Usage: GPU-hours, no price (--offer, --gpu-hour-brl)": "Uso: GPU-horas, sem preço (--offer, --gpu-hour-brl)",
    "Admission control: plans checked against {gpu}": "Controle de admissão: planos conferidos contra a {gpu}",
    "Admission control: off (no GPU model)": "Controle de admissão: desligado (sem modelo de GPU)",
    "Admin token (shown once; also in {path}, mode 0600): {token}": (
        "Token de admin (mostrado uma vez; também em {path}, modo 0600): {token}"
    ),
    "Listening on http://{host}:{port} (API under /api/v1, dashboard at /, log in with a token)": (
        "Escutando em http://{host}:{port} (API em /api/v1, painel em /, entre com um token)"
    ),
    "on its own": "por conta própria",
    "by {signal}": "por {signal}",
    (
        "Stopped {how}: audit checkpoint signed at record {seq}; {n} running job(s) left to their supervisors, adopted "
        "at the next start."
    ): (
        "Parado {how}: checkpoint de auditoria assinado no registro {seq}; {n} job(s) em execução deixado(s) com seus "
        "supervisores, adotado(s) no próximo início."
    ),
    "Webhooks: {n} URL(s), signed with the secret in {path}": "Webhooks: {n} URL(s), assinadas com o segredo em {path}",
    "Audit anchors: to {where}, every {interval:g} s and at shutdown": (
        "Âncoras de auditoria: para {where}, a cada {interval:g} s e ao desligar"
    ),
    "cgroup v{v} per attempt": "cgroup v{v} por tentativa",
    "no cgroups (stopped by their attempt key)": "sem cgroups (parados pela chave da tentativa)",
    "Jobs run as user {name}, in their own folders; {cgroup}": (
        "Os jobs rodam como o usuário {name}, em pastas próprias; {cgroup}"
    ),
    (
        "jobs run as {user}, the server's own user: a job can read the data dir (database, admin-token, server-key, "
        "dataset store) and act as admin. To fix: {fix}."
    ): (
        "os jobs rodam como {user}, o próprio usuário do servidor: um job pode ler o diretório de dados (banco de "
        "dados, admin-token, server-key, repositório de datasets) e agir como admin. Como corrigir: {fix}."
    ),
    "leave out --job-user (jobs then run as {job_user}) or name an unprivileged user": (
        "deixe --job-user de fora (os jobs passam a rodar como {job_user}) ou indique um usuário sem privilégios"
    ),
    "start the server as root (jobs then run as {job_user}) or as root with --job-user NAME": (
        "inicie o servidor como root (os jobs passam a rodar como {job_user}) ou como root com --job-user NOME"
    ),
    "Jobs in their own folders; {cgroup}": "Jobs em pastas próprias; {cgroup}",
    " at {rate:g} BRL/USD of {date}": " a {rate:g} BRL/USD de {date}",
    "offer {offer}: {formula}{fx} = {price} per GPU-hour; price of {as_of}, source: {source}": (
        "oferta {offer}: {formula}{fx} = {price} por GPU-hora; preço de {as_of}, fonte: {source}"
    ),
    "set by the server's operator: {price} per GPU-hour": "definido pelo operador do servidor: {price} por GPU-hora",
    # the audit verdict, the anchors and a subject report, as the server or the CLI words them (treino.govern)
    "{checked} anchor(s) agree with the recomputed chain: records 1-{last} are unchanged since {when}": (
        "{checked} âncora(s) conferem com a cadeia recalculada: os registros 1-{last} estão inalterados desde {when}"
    ),
    "the anchor file holds no anchors: nothing is proven beyond plain verify": (
        "o arquivo de âncoras não tem nenhuma âncora: nada é provado além da verificação simples"
    ),
    "{n:,} records and {cps:,} signed checkpoints verified; the head is record {head}": (
        "{n:,} registros e {cps:,} checkpoints assinados verificados; o topo é o registro {head}"
    ),
    (
        "{n:,} records and {cps:,} signed checkpoints verified; the head is record {head} (records {first}-{last} come "
        "after the last checkpoint)"
    ): (
        "{n:,} registros e {cps:,} checkpoints assinados verificados; o topo é o registro {head} (os registros "
        "{first}-{last} vêm depois do último checkpoint)"
    ),
    "the audit log is empty": "o log de auditoria está vazio",
    "no records: the subject is in no stored version of {n} searched dataset(s) ({names}).": (
        "nenhum registro: o titular não está em nenhuma versão guardada do(s) {n} dataset(s) pesquisado(s) ({names})."
    ),
    "no records: the subject is in no stored version of {n} searched dataset(s).": (
        "nenhum registro: o titular não está em nenhuma versão guardada do(s) {n} dataset(s) pesquisado(s)."
    ),
    "{dataset} v{version}: {rows} row(s); basis {basis}; purposes {purposes}; kept in {residency}": (
        "{dataset} v{version}: {rows} linha(s); base {basis}; finalidades {purposes}; guardado em {residency}"
    ),
    "model #{id} ({kind}) of job #{job} used {dataset} v{version}": (
        "o modelo nº {id} ({kind}) do job nº {job} usou {dataset} v{version}"
    ),
    "not searchable (personal data, no subject column): {names}": (
        "sem busca possível (dados pessoais, sem coluna de titulares): {names}"
    ),
    "{reason} (this check is not in the audit chain: {why})": (
        "{reason} (esta verificação não está na cadeia de auditoria: {why})"
    ),
    # a dataset import's warnings (treino.govern.datasets, treino.govern.cpf, treino.server.governance)
    "column '{column}': {valid:,} of {sampled:,} sampled values are valid CPFs": (
        "coluna '{column}': {valid:,} de {sampled:,} valores amostrados são CPFs válidos"
    ),
    "column '{column}': {valid:,} of {sampled:,} sampled values are valid CPFs (and its name says CPF)": (
        "coluna '{column}': {valid:,} de {sampled:,} valores amostrados são CPFs válidos (e o nome dela diz CPF)"
    ),
    (
        "'{name}' holds CPFs ({columns}) but is registered as not holding personal data; a CPF identifies a person "
        "(LGPD Art. 5 I). To fix: register it as personal data with its legal basis, or drop the column (a plain hash "
        "of a CPF is not anonymisation: 10^9 candidates are brute-forced in seconds)."
    ): (
        "'{name}' contém CPFs ({columns}), mas está registrado como sem dados pessoais; um CPF identifica uma pessoa "
        "(LGPD Art. 5 I). Como corrigir: registre-o como dado pessoal com sua base legal, ou retire a coluna (um hash "
        "simples de CPF não é anonimização: 10^9 candidatos são testados por força bruta em segundos)."
    ),
    (
        "'{name}' holds personal data but has no subject column: erasure and subject reports cannot find its rows "
        "(Art. 18). To fix: register it with --subject-column."
    ): (
        "'{name}' contém dados pessoais, mas não tem coluna de titulares: a eliminação e os relatórios de titular não "
        "encontram suas linhas (Art. 18). Como corrigir: registre-o com --subject-column."
    ),
    "'{name}' holds personal data with no retention period (Art. 15-16). To fix: set one.": (
        "'{name}' contém dados pessoais sem prazo de retenção (Art. 15-16). Como corrigir: defina um."
    ),
    (
        "Its CPF column '{column}' is recorded as the subject column, so erasure and access requests (Art. 18) reach "
        "its rows even though it was registered without one."
    ): (
        "Sua coluna de CPF '{column}' foi registrada como a coluna de titulares, para que os pedidos de eliminação e "
        "de acesso (Art. 18) alcancem suas linhas, embora tenha sido registrado sem uma."
    ),
    (
        "{rows} row(s) of {subjects} subject(s) erased earlier were stripped from this import (Art. 18 VI: erased "
        "stays erased)."
    ): (
        "{rows} linha(s) de {subjects} titular(es) já eliminado(s) foram retiradas desta importação (Art. 18 VI: o que "
        "foi eliminado continua eliminado)."
    ),
    "Report: {path}": "Relatório: {path}",
    "fp32, bf16-mixed, fp16-mixed, bf16-master, bf16-true, fp8 (torchao float8), bf16-fsdp (FSDP2's "
    "MixedPrecisionPolicy: bf16 gathers and compute, fp32 gradient reduce; with --zero 2 or 3).": (
        "fp32, bf16-mixed, fp16-mixed, bf16-master, bf16-true, fp8 (float8 do torchao), bf16-fsdp "
        "(MixedPrecisionPolicy do FSDP2: coleta e cálculo em bf16, redução dos gradientes em fp32; com --zero 2 ou 3)."
    ),
    "The training loop: plain (its `outputs` hold the logits through backward) or trainer (Hugging Face's Trainer, "
    "which keeps only the loss).": (
        "O laço de treino: plain (seus `outputs` retêm os logits durante o backward) ou trainer (o Trainer do Hugging "
        "Face, que guarda só a loss)."
    ),
    "GPUs in each server, sharing its fabric ports.": "GPUs em cada servidor, que dividem suas portas de rede.",
    "config.json field '{key}' must be an integer, got {value!r}.": (
        "o campo '{key}' do config.json deve ser um inteiro, não {value!r}."
    ),
    "config.json field '{key}' must be positive, got {value}.": (
        "o campo '{key}' do config.json deve ser positivo, não {value}."
    ),
    "config.json lacks '{key}'. To fix: add it (an integer) to the config.": (
        "falta '{key}' no config.json. Como corrigir: acrescente-o (um inteiro) à config."
    ),
    "config.json must hold a JSON object.": "o config.json deve conter um objeto JSON.",
    "config.json lacks 'model_type'. To fix: add the Hugging Face model_type (e.g. 'llama').": (
        "falta 'model_type' no config.json. Como corrigir: acrescente o model_type do Hugging Face (p. ex. 'llama')."
    ),
    (
        "The analytic planner does not model model_type '{family}'. Supported: {supported}. To fix: use --method "
        "trace, which runs the real model on fake tensors."
    ): (
        "O planejador analítico não modela o model_type '{family}'. Suportados: {supported}. Como corrigir: use "
        "--method trace, que roda o modelo real com tensores falsos."
    ),
    "num_attention_heads ({a}) does not divide hidden_size ({h}). To fix: correct the config.": (
        "num_attention_heads ({a}) não divide hidden_size ({h}). Como corrigir: corrija a config."
    ),
    "num_key_value_heads ({kv}) does not divide num_attention_heads ({a}).": (
        "num_key_value_heads ({kv}) não divide num_attention_heads ({a})."
    ),
    "num_experts_per_tok ({top_k}) exceeds num_local_experts ({experts}).": (
        "num_experts_per_tok ({top_k}) é maior que num_local_experts ({experts})."
    ),
    "num_experts_per_tok ({top_k}) exceeds num_experts ({experts}).": (
        "num_experts_per_tok ({top_k}) é maior que num_experts ({experts})."
    ),
    (
        "The analytic planner models Qwen2-MoE with an MoE block in every layer; this config mixes in dense "
        "layers (decoder_sparse_step or mlp_only_layers). To fix: use --method trace."
    ): (
        "O planejador analítico modela o Qwen2-MoE com um bloco MoE em toda camada; esta config mistura camadas "
        "densas (decoder_sparse_step ou mlp_only_layers). Como corrigir: use --method trace."
    ),
    "Unknown {label} {value!r}. To fix: use one of {allowed}.": (
        "{label} desconhecido(a): {value!r}. Como corrigir: use um destes: {allowed}."
    ),
    "--{label} must be at least 1, got {number}.": "--{label} deve ser pelo menos 1, não {number}.",
    "--zero must be 0, 1, 2 or 3, got {zero}.": "--zero deve ser 0, 1, 2 ou 3, não {zero}.",
    "{split} does not divide --gpus {gpus}. To fix: use divisors of the GPU count.": (
        "{split} não divide --gpus {gpus}. Como corrigir: use divisores do número de GPUs."
    ),
    "Offloading parameters needs ZeRO-3 (FSDP full shard). To fix: add --zero 3.": (
        "Descarregar os parâmetros exige ZeRO-3 (FSDP full shard). Como corrigir: acrescente --zero 3."
    ),
    "--lora-rank must be positive, got {rank}.": "--lora-rank deve ser positivo, não {rank}.",
    (
        "--precision bf16-fsdp is FSDP2's MixedPrecisionPolicy, for a full fine-tune sharded by FSDP. To fix: "
        "add --zero 3 (or 2), or, with LoRA, use --precision bf16-mixed."
    ): (
        "--precision bf16-fsdp é a MixedPrecisionPolicy do FSDP2, para um ajuste fino completo fragmentado pelo "
        "FSDP. Como corrigir: acrescente --zero 3 (ou 2), ou, com LoRA, use --precision bf16-mixed."
    ),
    "NF4 weights are frozen, so --quant nf4 needs LoRA. To fix: add --lora-rank 16 (QLoRA).": (
        "Pesos NF4 ficam congelados, então --quant nf4 exige LoRA. Como corrigir: acrescente --lora-rank 16 (QLoRA)."
    ),
    (
        "--pp {pp} x --pp-interleave {interleave} does not divide the model's {layers} layers. To fix: pick "
        "stage counts that divide the layers."
    ): (
        "--pp {pp} x --pp-interleave {interleave} não divide as {layers} camadas do modelo. Como corrigir: "
        "escolha números de estágios que dividam as camadas."
    ),
    (
        "--tp {tp} does not divide the model's {heads} attention heads and {kv_heads} key/value heads. To fix: "
        "use a tensor-parallel size that divides both."
    ): (
        "--tp {tp} não divide as {heads} cabeças de atenção e as {kv_heads} cabeças de chave/valor do modelo. "
        "Como corrigir: use um grau de paralelismo de tensor que divida as duas."
    ),
    "LoRA target(s) {unknown} are not modules of a {family} model. Valid: {valid}.": (
        "O(s) alvo(s) de LoRA {unknown} não são módulos de um modelo {family}. Válidos: {valid}."
    ),
    "--seq-len {seq_len} exceeds the model's {positions} learned positions.": (
        "--seq-len {seq_len} passa das {positions} posições aprendidas do modelo."
    ),
    "No activation coefficients for {family} {compute} {kernel}.": (
        "Não há coeficientes de ativação para {family} {compute} {kernel}."
    ),
    "Exchange rate must be a positive number of BRL per USD, got {rate}.": (
        "A taxa de câmbio deve ser um número positivo de BRL por USD, não {rate}."
    ),
    "Offer {name!r} has no valid price ({price}). To fix: give its price.": (
        "A oferta {name!r} não tem preço válido ({price}). Como corrigir: informe o preço."
    ),
    "Offer {name!r} must have at least one GPU, got {gpus}.": (
        "A oferta {name!r} deve ter pelo menos uma GPU, não {gpus}."
    ),
    (
        "{what} is priced in USD but no BRL/USD rate was given. To fix: add a dated row to fx.csv or pass a "
        "rate; treino never assumes one."
    ): (
        "{what} tem preço em USD, mas nenhuma taxa BRL/USD foi dada. Como corrigir: acrescente uma linha datada "
        "ao fx.csv ou passe uma taxa; o treino nunca supõe uma."
    ),
    "Transfer must be zero or more GB, got {gb}.": "A transferência deve ser de zero GB ou mais, não {gb}.",
    (
        "Offer {name!r} has no egress price, and {gb:g} GB would leave it. To fix: add egress_usd_per_gb to the "
        "offer (a local offers file), or plan with no transfer."
    ): (
        "A oferta {name!r} não tem preço de saída de dados, e {gb:g} GB sairiam dela. Como corrigir: acrescente "
        "egress_usd_per_gb à oferta (num arquivo local de ofertas), ou planeje sem transferência."
    ),
    "Need hours_per_run > 0, runs_per_month >= 0 and months >= 1; got {hours}, {runs}, {months}.": (
        "É preciso hours_per_run > 0, runs_per_month >= 0 e months >= 1; vieram {hours}, {runs}, {months}."
    ),
    (
        "{runs:g} runs of {hours:g} h need {month_hours:g} h a month, more than the {limit} h one dedicated "
        "server {name!r} has. To fix: rent more servers, or run fewer or shorter jobs."
    ): (
        "{runs:g} execuções de {hours:g} h precisam de {month_hours:g} h por mês, mais que as {limit} h de um "
        "servidor dedicado {name!r}. Como corrigir: alugue mais servidores, ou rode menos jobs ou jobs mais "
        "curtos."
    ),
    (
        "break_even_utilisation compares a dedicated offer with a cloud one; got {dedicated!r} "
        "({dedicated_kind}) and {cloud!r} ({cloud_kind})."
    ): (
        "break_even_utilisation compara uma oferta dedicada com uma de nuvem; vieram {dedicated!r} "
        "({dedicated_kind}) e {cloud!r} ({cloud_kind})."
    ),
    "Exchange-rate move must be between 0 and 100 %, got {pct}.": (
        "A variação do câmbio deve estar entre 0 e 100 %, não {pct}."
    ),
    "Cannot show {amount} as money.": "Não é possível mostrar {amount} como dinheiro.",
    "--batch, --context and --gpus must be at least 1.": "--batch, --context e --gpus devem ser pelo menos 1.",
    "Unknown --weights {weights!r}. To fix: use one of {valid}.": (
        "--weights desconhecido: {weights!r}. Como corrigir: use um destes: {valid}."
    ),
    "Unknown KV-cache dtype {dtype!r}. To fix: use one of {valid}.": (
        "Tipo do cache KV desconhecido: {dtype!r}. Como corrigir: use um destes: {valid}."
    ),
    "{gpus} GPUs do not divide the model's {kv_heads} key/value heads.": (
        "{gpus} GPUs não dividem as {kv_heads} cabeças de chave/valor do modelo."
    ),
    "Unknown attention dtype {dtype!r}. To fix: use fp32, bf16 or fp16.": (
        "Tipo da atenção desconhecido: {dtype!r}. Como corrigir: use fp32, bf16 ou fp16."
    ),
    "Unknown --data {data!r}. To fix: use one of {valid}.": (
        "--data desconhecido: {data!r}. Como corrigir: use um destes: {valid}."
    ),
    "Unknown --storage {storage!r}. To fix: use one of {valid}.": (
        "--storage desconhecido: {storage!r}. Como corrigir: use um destes: {valid}."
    ),
    "CPU cores, RAM, storage speed and the token rate must be positive.": (
        "Os núcleos de CPU, a RAM, a velocidade do armazenamento e a taxa de tokens devem ser positivos."
    ),
    "--tokens must be positive.": "--tokens deve ser positivo.",
    "--deadline must be positive.": "--deadline deve ser positivo.",
    "--budget must be positive.": "--budget deve ser positivo.",
    "--checkpoint-minutes must be positive.": "--checkpoint-minutes deve ser positivo.",
    "Unknown MIG profile {profile!r}. To fix: use one of {valid}.": (
        "Perfil MIG desconhecido: {profile!r}. Como corrigir: use um destes: {valid}."
    ),
    "The {gpu} does not support MIG. To fix: use --time-slice, or one of {valid}.": (
        "A {gpu} não suporta MIG. Como corrigir: use --time-slice, ou uma destas: {valid}."
    ),
    "Neighbours must be >= 0 and their memory fraction in [0, 1).": (
        "Os vizinhos devem ser >= 0 e sua fração da memória estar em [0, 1)."
    ),
    "Unknown sharing {kind!r}. To fix: use mig or time-slice.": (
        "Compartilhamento desconhecido: {kind!r}. Como corrigir: use mig ou time-slice."
    ),
    (
        "{runs:g} runs of {hours:,.1f} h do not fit in a month on {offer}. To fix: fewer runs a month, or more servers."
    ): (
        "{runs:g} execuções de {hours:,.1f} h não cabem num mês em {offer}. Como corrigir: menos execuções por "
        "mês, ou mais servidores."
    ),
    "Compare a dedicated offer (--dedicated) with a cloud one (--cloud).": (
        "Compare uma oferta dedicada (--dedicated) com uma de nuvem (--cloud)."
    ),
    (
        "No offer fits this job, so there is nothing to plot. To fix: add offers with more GPU memory (--offers "
        "FILE), or raise --max-gpus."
    ): (
        "Nenhuma oferta comporta este job, então não há o que plotar. Como corrigir: acrescente ofertas com mais "
        "memória de GPU (--offers FILE), ou aumente --max-gpus."
    ),
    "a price without a fabric. To fix: name the fabric, or leave fabric_price empty.": (
        "um preço sem rede. Como corrigir: indique a rede, ou deixe fabric_price vazio."
    ),
    "a fabric needs the page that states it. To fix: cite it, or write fabric none (one server only).": (
        "uma rede precisa da página que a informa. Como corrigir: cite-a, ou escreva fabric none (um servidor só)."
    ),
    "an NVLink domain needs interconnect nvlink. To fix: leave it empty for PCIe servers.": (
        "um domínio NVLink exige interconnect nvlink. Como corrigir: deixe-o vazio para servidores PCIe."
    ),
    "missing; every offer needs it (a missing price or date is never taken as zero)": (
        "ausente; toda oferta precisa dele (um preço ou data ausente nunca vale zero)"
    ),
    "{where} line {line}: field {field!r}: {problem}": "{where} linha {line}: campo {field!r}: {problem}",
    "{where} line {line}: {error}": "{where} linha {line}: {error}",
    "{where} line {line}: field 'name': offer {name!r} appears twice.": (
        "{where} linha {line}: campo 'name': a oferta {name!r} aparece duas vezes."
    ),
    "Only BRL per USD rates are supported, not {quote} per {base}.": (
        "Só há suporte a taxas de BRL por USD, não {quote} por {base}."
    ),
    " on or before {on}": " em {on} ou antes",
    (
        "No {quote} per {base} rate in fx.csv{when}. To fix: add a dated row with its source (e.g. the Banco "
        "Central PTAX); treino never assumes a rate."
    ): (
        "Não há taxa de {quote} por {base} no fx.csv{when}. Como corrigir: acrescente uma linha datada com sua "
        "fonte (p. ex. a PTAX do Banco Central); o treino nunca supõe uma taxa."
    ),
    "{where} is not valid YAML: {error}": "{where} não é YAML válido: {error}",
    (
        "{where} must hold a list of offers (or 'offers:' with a list). To fix: see the fields of `treino offers "
        "--json`."
    ): (
        "{where} deve conter uma lista de ofertas (ou 'offers:' com uma lista). Como corrigir: veja os campos de "
        "`treino offers --json`."
    ),
    "{where} line {line}: each offer must be a mapping of field: value.": (
        "{where} linha {line}: cada oferta deve ser um mapeamento de campo: valor."
    ),
    "No offers file at {path!r}. To fix: give a .csv or .yaml path.": (
        "Não há arquivo de ofertas em {path!r}. Como corrigir: indique um caminho .csv ou .yaml."
    ),
    "{path!r}: offers files must end in .csv, .yaml or .yml.": (
        "{path!r}: arquivos de ofertas devem terminar em .csv, .yaml ou .yml."
    ),
    "gpus.csv line {line}: {where}: {error}": "gpus.csv linha {line}: {where}: {error}",
    "{where} is not valid JSON: {error} at line {line}, column {column}.": (
        "{where} não é JSON válido: {error} na linha {line}, coluna {column}."
    ),
    "{where} must hold a JSON object (a Hugging Face config.json).": (
        "{where} deve conter um objeto JSON (um config.json do Hugging Face)."
    ),
    "No config file at {path!r}. To fix: give a preset name or a config.json path.": (
        "Não há arquivo de config em {path!r}. Como corrigir: indique o nome de um preset ou o caminho de um "
        "config.json."
    ),
    (
        "--residency {text!r} is neither an ISO 3166-1 alpha-2 country code nor a site.{hint} To fix: give a "
        "two-letter country code (the catalog's sites are in {countries}) or a site name from 'treino sites'."
    ): (
        "--residency {text!r} não é um código de país ISO 3166-1 alfa-2 nem um local.{hint} Como corrigir: "
        "indique um código de país de duas letras (os locais do catálogo ficam em {countries}) ou o nome de um "
        "local de 'treino sites'."
    ),
    (
        "Model {repo!r} is neither a preset nor in the local Hugging Face cache (looked for "
        "{snapshots}/*/config.json; treino never downloads). To fix: on a machine with network run "
        "'huggingface-cli download {repo} config.json' (or set HF_HOME to the cache that holds it), or copy its "
        "config.json here and pass --model path/to/config.json; 'treino models' lists the presets."
    ): (
        "O modelo {repo!r} não é um preset nem está no cache local do Hugging Face (procurado em "
        "{snapshots}/*/config.json; o treino nunca baixa nada). Como corrigir: numa máquina com rede, rode "
        "'huggingface-cli download {repo} config.json' (ou aponte HF_HOME para o cache que o contém), ou copie o "
        "config.json dele para cá e passe --model caminho/para/config.json; 'treino models' lista os presets."
    ),
    "Input should be greater than {gt}": "O valor deve ser maior que {gt}",
    "Input should be greater than or equal to {ge}": "O valor deve ser maior ou igual a {ge}",
    "String should match pattern '{pattern}'": "O texto deve seguir o padrão '{pattern}'",
    # more of pydantic's words (treino.i18n.PYDANTIC_MSGS): a job spec's and an API body's usual mistakes
    "Field required": "Campo obrigatório",
    "Extra inputs are not permitted": "Não são permitidos campos extras",
    "Input should be less than {lt}": "O valor deve ser menor que {lt}",
    "Input should be less than or equal to {le}": "O valor deve ser menor ou igual a {le}",
    "Input should be a valid list": "Deveria ser uma lista",
    "Input should be a valid dictionary": "Deveria ser um mapeamento (dicionário)",
    "Input should be a valid dictionary or instance of {class_name}": (
        "Deveria ser um mapeamento (dicionário) ou uma instância de {class_name}"
    ),
    "Input should be a valid dictionary or object to extract fields from": (
        "Deveria ser um mapeamento (dicionário) ou um objeto de onde ler os campos"
    ),
    "String should have at least {min_length} character": "O texto deve ter pelo menos {min_length} caractere",
    "String should have at least {min_length} characters": "O texto deve ter pelo menos {min_length} caracteres",
    "String should have at most {max_length} character": "O texto deve ter no máximo {max_length} caractere",
    "String should have at most {max_length} characters": "O texto deve ter no máximo {max_length} caracteres",
    "List should have at least {min_length} item after validation, not {actual_length}": (
        "A lista deve ter pelo menos {min_length} item, não {actual_length}"
    ),
    "List should have at least {min_length} items after validation, not {actual_length}": (
        "A lista deve ter pelo menos {min_length} itens, não {actual_length}"
    ),
    "List should have at most {max_length} item after validation, not {actual_length}": (
        "A lista deve ter no máximo {max_length} item, não {actual_length}"
    ),
    "List should have at most {max_length} items after validation, not {actual_length}": (
        "A lista deve ter no máximo {max_length} itens, não {actual_length}"
    ),
    "Dictionary should have at most {max_length} items after validation, not more": (
        "O mapeamento deve ter no máximo {max_length} itens"
    ),
    (
        "The {backend} collectives did not finish within {timeout_s:.0f} s (exit codes {codes}). To fix: rerun "
        "with --only to skip collectives."
    ): (
        "As coletivas {backend} não terminaram em {timeout_s:.0f} s (códigos de saída {codes}). Como corrigir: "
        "rode de novo com --only para pular as coletivas."
    ),
    "Cannot read the profile {path}: {error}. To fix: write one with 'treino bench --save'.": (
        "Não foi possível ler o perfil {path}: {error}. Como corrigir: grave um com 'treino bench --save'."
    ),
    (
        "{path} is not a treino hardware profile of schema_version {version}. To fix: write it again with "
        "'treino bench --save'."
    ): (
        "{path} não é um perfil de hardware do treino com schema_version {version}. Como corrigir: grave-o de "
        "novo com 'treino bench --save'."
    ),
    (
        "The profile holds no GPU measurements (it was saved on a machine without GPUs). To fix: run 'treino "
        "bench --save' on the GPU server."
    ): (
        "O perfil não tem medições de GPU (foi gravado numa máquina sem GPUs). Como corrigir: rode 'treino bench "
        "--save' no servidor de GPUs."
    ),
    (
        "The profile measured {measured} ({name}), but the plan is for {gpu}. To fix: --gpu {measured}, or a "
        "profile measured on a {display}."
    ): (
        "O perfil mediu a {measured} ({name}), mas o plano é para a {gpu}. Como corrigir: --gpu {measured}, ou "
        "um perfil medido numa {display}."
    ),
    "Unknown stage {stage!r} in --only.{hint} Valid stages: {valid}.": (
        "Etapa desconhecida {stage!r} em --only.{hint} Etapas válidas: {valid}."
    ),
    "--path {directory} is not a directory. To fix: give the dataset's directory.": (
        "--path {directory} não é um diretório. Como corrigir: indique o diretório do dataset."
    ),
    "Cannot write a {gb:.1f} GB test file in {directory}: {error}.": (
        "Não foi possível gravar um arquivo de teste de {gb:.1f} GB em {directory}: {error}."
    ),
    (
        "The profile {path} holds no CPU measurements. To fix: run 'treino bench --train-step --model M --save "
        "{path}' on the CPU host (without CUDA)."
    ): (
        "O perfil {path} não tem medições de CPU. Como corrigir: rode 'treino bench --train-step --model M "
        "--save {path}' na máquina de CPU (sem CUDA)."
    ),
    (
        "The profile {path} measured training steps on {devices}, not on {gpu}. To fix: --gpu {last}, or run "
        "'treino bench --train-step' on a {display}."
    ): (
        "O perfil {path} mediu passos de treino em {devices}, não na {gpu}. Como corrigir: --gpu {last}, ou rode "
        "'treino bench --train-step' numa {display}."
    ),
    "--precision {precision!r} cannot be benchmarked. To fix: use one of {valid}.": (
        "--precision {precision!r} não pode ser medida. Como corrigir: use uma destas: {valid}."
    ),
    (
        "--cpu-time times steps on the CPU, and this host has a CUDA GPU. To fix: drop --cpu-time, or hide the "
        "GPUs (CUDA_VISIBLE_DEVICES=) to benchmark the CPU."
    ): (
        "--cpu-time cronometra passos na CPU, e esta máquina tem uma GPU CUDA. Como corrigir: tire --cpu-time, "
        "ou esconda as GPUs (CUDA_VISIBLE_DEVICES=) para medir a CPU."
    ),
    (
        "The catalog has no GPU like {name!r}, so its peak TFLOP/s are unknown. To fix: add it to gpus.csv, or "
        "run 'treino bench --train-step' on a catalog GPU ('treino gpus')."
    ): (
        "O catálogo não tem GPU como {name!r}, então seu pico de TFLOP/s é desconhecido. Como corrigir: "
        "acrescente-a ao gpus.csv, ou rode 'treino bench --train-step' numa GPU do catálogo ('treino gpus')."
    ),
    "--steps must be at least 1 and --warmup-steps at least 0, got {steps} and {warmup}.": (
        "--steps deve ser pelo menos 1 e --warmup-steps pelo menos 0; vieram {steps} e {warmup}."
    ),
    "--micro-batch and --seq-len must be at least 1, got {micro_batch} and {seq_len}.": (
        "--micro-batch e --seq-len devem ser pelo menos 1; vieram {micro_batch} e {seq_len}."
    ),
    "{model}'s forward returned no loss. To fix: a config with a language-model head.": (
        "O forward de {model} não devolveu loss. Como corrigir: uma config com cabeça de modelo de linguagem."
    ),
    (
        "{model} at micro-batch {micro_batch} x {seq_len} tokens does not fit this GPU: {error}. To fix: a "
        "smaller --micro-batch or --seq-len."
    ): (
        "{model} com micro-batch {micro_batch} x {seq_len} tokens não cabe nesta GPU: {error}. Como corrigir: um "
        "--micro-batch ou --seq-len menor."
    ),
    (
        "The audit key must be at least {min_bytes} random bytes. To fix: generate one with 'python -c \"import "
        "secrets; print(secrets.token_hex(32))\"'."
    ): (
        "A chave de auditoria deve ter pelo menos {min_bytes} bytes aleatórios. Como corrigir: gere uma com "
        "'python -c \"import secrets; print(secrets.token_hex(32))\"'."
    ),
    "checkpoint_every must be >= 1 record, not {every}.": "checkpoint_every deve ser >= 1 registro, não {every}.",
    " Known: {known}.": " Conhecidas: {known}.",
    "Unknown audit action {action!r}.{hint}": "Ação de auditoria desconhecida: {action!r}.{hint}",
    "An audit record's time must be unix seconds, not {time_s!r}.": (
        "A hora de um registro de auditoria deve estar em segundos unix, não {time_s!r}."
    ),
    (
        "An audit record's subject must be a pseudonym (64 hex digits), never a raw identifier. To fix: pass "
        "treino.govern.audit.pseudonym(key, subject_id)."
    ): (
        "O titular de um registro de auditoria deve ser um pseudônimo (64 dígitos hexadecimais), nunca um "
        "identificador bruto. Como corrigir: passe treino.govern.audit.pseudonym(key, subject_id)."
    ),
    (
        "An audit record may not carry a CPF (LGPD: logs hold pseudonyms only, docs/govern.md). To fix: put "
        "pseudonym(key, cpf) "
        "in subject, and keep identifiers out of detail."
    ): (
        "Um registro de auditoria não pode conter um CPF (LGPD: os logs guardam só pseudônimos, docs/govern.md). "
        "Como corrigir: ponha "
        "pseudonym(key, cpf) em subject, e mantenha identificadores fora de detail."
    ),
    "Unknown export format {fmt!r}. To fix: use 'jsonl' or 'csv'.": (
        "Formato de exportação desconhecido: {fmt!r}. Como corrigir: use 'jsonl' ou 'csv'."
    ),
    "A CPF's check digits follow nine digits, not {digits!r}.": (
        "Os dígitos verificadores de um CPF seguem nove dígitos, não {digits!r}."
    ),
    "Unknown --method {method!r}. To fix: use analytic or trace.": (
        "--method desconhecido: {method!r}. Como corrigir: use analytic ou trace."
    ),
    "--epochs must be at least 1, got {epochs}.": "--epochs deve ser pelo menos 1, não {epochs}.",
    "--max-gpus must be between 1 and 1024, got {max_gpus}.": "--max-gpus deve estar entre 1 e 1024, não {max_gpus}.",
    "Say how the GPU is shared. To fix: give --mig 3g, or --time-slice 1 (one neighbour).": (
        "Diga como a GPU é compartilhada. Como corrigir: indique --mig 3g, ou --time-slice 1 (um vizinho)."
    ),
    "Offer {name!r} has {offer_gpu} GPUs, not {gpu}. To fix: --gpu {offer_gpu}.": (
        "A oferta {name!r} tem GPUs {offer_gpu}, não {gpu}. Como corrigir: --gpu {offer_gpu}."
    ),
    "Pricing a run needs its length. To fix: add --tokens.": (
        "Para dar preço a uma execução é preciso sua duração. Como corrigir: acrescente --tokens."
    ),
    "Cannot read the deadline {text!r}. To fix: write e.g. 3d, 72h or 90m.": (
        "Não foi possível ler o prazo {text!r}. Como corrigir: escreva p. ex. 3d, 72h ou 90m."
    ),
    'Cannot read the budget {text!r}. To fix: write e.g. "R$ 50.000" or 50000.': (
        'Não foi possível ler o orçamento {text!r}. Como corrigir: escreva p. ex. "R$ 50.000" ou 50000.'
    ),
    "--model is for --train-step. To fix: add --train-step, or drop --model.": (
        "--model é para --train-step. Como corrigir: acrescente --train-step, ou tire --model."
    ),
    "--fx-rate must be a positive number of BRL per USD, got {given}. To fix: e.g. --fx-rate 5.4.": (
        "--fx-rate deve ser um número positivo de BRL por USD, não {given}. Como corrigir: p. ex. --fx-rate 5.4."
    ),
    "Unknown --kind {kind!r}. To fix: use dedicated or cloud.": (
        "--kind desconhecido: {kind!r}. Como corrigir: use dedicated ou cloud."
    ),
    "Cannot read {path}: {error}. To fix: write it as YAML with 'url:' and 'token:'.": (
        "Não foi possível ler {path}: {error}. Como corrigir: escreva-o em YAML com 'url:' e 'token:'."
    ),
    "{path} must hold a mapping with 'url:' and 'token:', not {kind}.": (
        "{path} deve conter um mapeamento com 'url:' e 'token:', não {kind}."
    ),
    (
        "No API token for {url}. The server writes its admin token to 'admin-token' in its data dir (default "
        "~/.local/share/treino/admin-token; /var/lib/treino/admin-token for a root server) and prints it at its "
        "first start. To fix: pass it with --token, set TREINO_TOKEN, or add 'token: ...' to {config}."
    ): (
        "Não há token da API para {url}. O servidor grava seu token de admin em 'admin-token' no seu diretório "
        "de dados (por padrão ~/.local/share/treino/admin-token; /var/lib/treino/admin-token para um servidor "
        "rodando como root) e o mostra na primeira vez que inicia. Como corrigir: passe-o com --token, defina "
        "TREINO_TOKEN, ou acrescente 'token: ...' a {config}."
    ),
    "No treino server at {url}. To fix: start one with 'treino server' or pass --url.": (
        "Não há servidor treino em {url}. Como corrigir: inicie um com 'treino server' ou passe --url."
    ),
    "The treino server at {url} did not answer within {timeout_s:g} s.": (
        "O servidor treino em {url} não respondeu em {timeout_s:g} s."
    ),
    "Cannot use the server URL {url!r}: {error}. To fix: e.g. {default}.": (
        "Não é possível usar a URL do servidor {url!r}: {error}. Como corrigir: p. ex. {default}."
    ),
    "Talking to the treino server at {url} failed: {error}": (
        "A conversa com o servidor treino em {url} falhou: {error}"
    ),
    "The treino server answered {status}: {text}": "O servidor treino respondeu {status}: {text}",
    "{path}: workdir {workdir} is not a directory. To fix: give an existing one.": (
        "{path}: o workdir {workdir} não é um diretório. Como corrigir: indique um que exista."
    ),
    (
        "{path}: script {script!r} is not a file in the workdir {workdir}. To fix: give 'script' relative to the "
        "spec file's directory (or to 'workdir'), or as an absolute path."
    ): (
        "{path}: o script {script!r} não é um arquivo no workdir {workdir}. Como corrigir: indique 'script' "
        "relativo ao diretório do arquivo de spec (ou a 'workdir'), ou como caminho absoluto."
    ),
    "Job {job_id} has {attempts} attempt(s), not {attempt}. To fix: --attempt 1..{attempts}.": (
        "O job {job_id} tem {attempts} tentativa(s), não {attempt}. Como corrigir: --attempt 1..{attempts}."
    ),
    "Cannot read {option} {text!r}. To fix: write ISO 8601, e.g. 2025-03-01 or 2025-03-01T12:00.": (
        "Não foi possível ler {option} {text!r}. Como corrigir: escreva em ISO 8601, p. ex. 2025-03-01 ou "
        "2025-03-01T12:00."
    ),
    "Give either --days (with --legal-basis and --reason) or --erase. To fix: pick one.": (
        "Indique --days (com --legal-basis e --reason) ou --erase. Como corrigir: escolha um."
    ),
    "Cannot read --anchors {path}: {error}. To fix: name the file --audit-anchor writes.": (
        "Não foi possível ler --anchors {path}: {error}. Como corrigir: indique o arquivo que --audit-anchor grava."
    ),
    "Cannot read --key-file {path}: {error}. To fix: name DATA_DIR/server-key.": (
        "Não foi possível ler --key-file {path}: {error}. Como corrigir: indique DATA_DIR/server-key."
    ),
    "Unknown export format {fmt!r}. To fix: --format jsonl or --format csv.": (
        "Formato de exportação desconhecido: {fmt!r}. Como corrigir: --format jsonl ou --format csv."
    ),
    (
        "Job {job_id} logged more than {most:,} points at step {step}: they do not fit one page. To fix: read "
        "them with 'treino show {job_id} --metric NAME', one key at a time."
    ): (
        "O job {job_id} registrou mais de {most:,} pontos no passo {step}: eles não cabem numa página. Como "
        "corrigir: leia-os com 'treino show {job_id} --metric NAME', uma chave por vez."
    ),
    "--csv and --json are two formats of the same points. To fix: give one of them.": (
        "--csv e --json são dois formatos dos mesmos pontos. Como corrigir: indique um deles."
    ),
    "--partition and --slurm-account go with --backend slurm. To fix: add --backend slurm.": (
        "--partition e --slurm-account vão com --backend slurm. Como corrigir: acrescente --backend slurm."
    ),
    "Unknown --backend {backend!r}. To fix: use 'local' or 'slurm'.": (
        "--backend desconhecido: {backend!r}. Como corrigir: use 'local' ou 'slurm'."
    ),
    (
        "Stopped {how}, but the shutdown's audit checkpoint could not be signed: {error}. Running jobs were left "
        "to their supervisors. To fix: free the disk or repair the database, then start the server again (it "
        "signs the head every 5 minutes)."
    ): (
        "Parado {how}, mas o checkpoint de auditoria do desligamento não pôde ser assinado: {error}. Os jobs em "
        "execução ficaram com seus supervisores. Como corrigir: libere o disco ou repare o banco de dados, e "
        "inicie o servidor de novo (ele assina a cabeça a cada 5 minutos)."
    ),
    "--job-user goes with --backend local. To fix: leave it out with --backend slurm.": (
        "--job-user vai com --backend local. Como corrigir: deixe-o de fora com --backend slurm."
    ),
    "--train-step needs a model. To fix: add --model NAME (a preset or a config.json path).": (
        "--train-step precisa de um modelo. Como corrigir: acrescente --model NAME (um preset ou o caminho de um "
        "config.json)."
    ),
    "--by {by!r}: not user, purpose or job. To fix: e.g. --by purpose.": (
        "--by {by!r}: não é user, purpose nem job. Como corrigir: p. ex. --by purpose."
    ),
    "Give --user NAME or --role ROLE (one of them). To fix: e.g. --user ana.": (
        "Indique --user NAME ou --role ROLE (um dos dois). Como corrigir: p. ex. --user ana."
    ),
    (
        "Tracing {model} on fake tensors failed: {kind}: {error}. To fix: use --method analytic if the family is "
        "supported, or make the model's forward independent of tensor values; --debug shows the traceback."
    ): (
        "O traçado de {model} com tensores falsos falhou: {kind}: {error}. Como corrigir: use --method analytic "
        "se a família tiver suporte, ou faça o forward do modelo não depender dos valores dos tensores; --debug "
        "mostra o traceback."
    ),
    "another optimizer": "outro otimizador",
    (
        "Trace mode runs one process on fake tensors and cannot trace {flags}. To fix: use --method analytic, or "
        "trace with {fixes}."
    ): (
        "O modo trace roda um só processo com tensores falsos e não consegue traçar {flags}. Como corrigir: use "
        "--method analytic, ou trace com {fixes}."
    ),
    "Unknown precision {precision!r}. To fix: use one of {valid}.": (
        "Precisão desconhecida: {precision!r}. Como corrigir: use uma destas: {valid}."
    ),
    "Optimizer {name!r} cannot be traced. To fix: use one of {valid} (adamw-8bit needs bitsandbytes on a GPU).": (
        "O otimizador {name!r} não pode ser traçado. Como corrigir: use um destes: {valid} (adamw-8bit exige "
        "bitsandbytes numa GPU)."
    ),
    (
        "The traced model's forward returned no loss. To fix: return a scalar tensor or an object with a .loss "
        "attribute."
    ): (
        "O forward do modelo traçado não devolveu loss. Como corrigir: devolva um tensor escalar ou um objeto "
        "com o atributo .loss."
    ),
    "Full checkpointing in trace mode needs a Hugging Face model.": (
        "O checkpointing completo no modo trace exige um modelo do Hugging Face."
    ),
    "grad_accum must be at least 1, got {grad_accum}.": "grad_accum deve ser pelo menos 1, não {grad_accum}.",
    "Unknown checkpointing {checkpointing!r}. To fix: use none, selective or full.": (
        "Checkpointing desconhecido: {checkpointing!r}. Como corrigir: use none, selective ou full."
    ),
    "--checkpointing none or full": "--checkpointing none ou full",
    "The config has no 'model_type'. To fix: add the Hugging Face model_type field.": (
        "A config não tem 'model_type'. Como corrigir: acrescente o campo model_type do Hugging Face."
    ),
    (
        "transformers {version} does not know model_type {model_type!r}: {error} To fix: upgrade transformers, "
        "or trace your own model with --model module:function."
    ): (
        "o transformers {version} não conhece o model_type {model_type!r}: {error} Como corrigir: atualize o "
        "transformers, ou trace seu próprio modelo com --model módulo:função."
    ),
    (
        "transformers has no causal, seq2seq or masked language-model head for {model_type!r}. To fix: trace "
        "your own model with --model module:function."
    ): (
        "o transformers não tem cabeça de modelo de linguagem causal, seq2seq ou mascarado para {model_type!r}. "
        "Como corrigir: trace seu próprio modelo com --model módulo:função."
    ),
    "{spec!r} is not 'module:function'. To fix: e.g. --model mypkg.models:build.": (
        "{spec!r} não é 'módulo:função'. Como corrigir: p. ex. --model mypkg.models:build."
    ),
    "Cannot load {spec!r}: {error}. To fix: run from the folder that holds the module, or add it to PYTHONPATH.": (
        "Não foi possível carregar {spec!r}: {error}. Como corrigir: rode a partir da pasta que contém o módulo, "
        "ou acrescente-a ao PYTHONPATH."
    ),
    ("{spec} must return (nn.Module, dict of forward keyword arguments), got {kind}. To fix: return (model, batch)."): (
        "{spec} deve devolver (nn.Module, dict de argumentos nomeados do forward), não {kind}. Como corrigir: "
        "devolva (model, batch)."
    ),
    "Expecting value": "esperava um valor",
    "Expecting property name enclosed in double quotes": "esperava um nome de propriedade entre aspas duplas",
    "Expecting ':' delimiter": "esperava o delimitador ':'",
    "Expecting ',' delimiter": "esperava o delimitador ','",
    "Unterminated string starting at": "texto sem fim que começa em",
    "Invalid control character at": "caractere de controle inválido em",
    "Invalid \\escape": "\\escape inválido",
    "Invalid \\uXXXX escape": "escape \\uXXXX inválido",
    "Extra data": "dados a mais",
    "Illegal trailing comma before end of object": "vírgula sobrando antes do fim do objeto",
    "Illegal trailing comma before end of array": "vírgula sobrando antes do fim do array",
    "not a JSON object": "não é um objeto JSON",
    "{problem}: line {line} column {column} (char {pos})": "{problem}: linha {line} coluna {column} (caractere {pos})",
    (
        "{source} line {n} is not an audit anchor ({why}): {shown!r}. To fix: restore the anchor file from its "
        "write-once copy; each line is one JSON object written by 'treino server --audit-anchor'."
    ): (
        "{source} linha {n} não é uma âncora de auditoria ({why}): {shown!r}. Como corrigir: restaure o arquivo "
        "de âncoras de sua cópia gravada uma só vez; cada linha é um objeto JSON escrito por 'treino server "
        "--audit-anchor'."
    ),
    "format version {v!r}, not {version}": "versão de formato {v!r}, não {version}",
    "seq {seq!r} is not a record number": "seq {seq!r} não é um número de registro",
    "{name} is not 64 hex digits": "{name} não tem 64 dígitos hexadecimais",
    "time {time_s!r} is not unix seconds": "time {time_s!r} não está em segundos unix",
    "reason {reason!r} is not one of {valid}": "reason {reason!r} não é um destes: {valid}",
    "{folder} exists but holds no checkpoint of step {step}.": (
        "{folder} existe, mas não contém checkpoint do passo {step}."
    ),
    (
        "the checkpoint of step {step} in {folder} is no longer on disk (deleted, or erased with its data). To "
        "fix: resubmit the old job with --from-scratch."
    ): (
        "o checkpoint do passo {step} em {folder} não está mais no disco (apagado, ou eliminado com seus dados). "
        "Como corrigir: reenvie o job antigo com --from-scratch."
    ),
    (
        "the checkpoint of step {step} in {folder} is not the job's own files (see the server's log). To fix: "
        "resubmit the old job with --from-scratch."
    ): (
        "o checkpoint do passo {step} em {folder} não é feito dos arquivos do próprio job (veja o log do "
        "servidor). Como corrigir: reenvie o job antigo com --from-scratch."
    ),
    "sacct printed no table of jobs: {answer!r}": "o sacct não imprimiu uma tabela de jobs: {answer!r}",
    "{first} or {rest}": "{first} ou {rest}",
    "num_experts_per_tok ({top_k}) exceeds n_routed_experts ({experts}). To fix: correct the config.": (
        "num_experts_per_tok ({top_k}) passa de n_routed_experts ({experts}). Como corrigir: corrija o config."
    ),
    "n_group ({groups}) does not divide n_routed_experts ({experts}). To fix: correct the config.": (
        "n_group ({groups}) não divide n_routed_experts ({experts}). Como corrigir: corrija o config."
    ),
    "topk_group ({topk_groups}) exceeds n_group ({groups}). To fix: correct the config.": (
        "topk_group ({topk_groups}) passa de n_group ({groups}). Como corrigir: corrija o config."
    ),
    "config.json field 'n_shared_experts' must be a non-negative integer, got {shared!r}. To fix: correct the "
    "config.": (
        "O campo 'n_shared_experts' do config.json deve ser um inteiro não negativo, não {shared!r}. Como corrigir: "
        "corrija o config."
    ),
    "config.json field 'first_k_dense_replace' must be an integer from 0 to num_hidden_layers ({L}), got "
    "{first_dense!r}. To fix: correct the config.": (
        "O campo 'first_k_dense_replace' do config.json deve ser um inteiro de 0 a num_hidden_layers ({L}), não "
        "{first_dense!r}. Como corrigir: corrija o config."
    ),
    "Unknown fabric {text!r}. To fix: write NICs per server x line rate and kind, e.g. 8x400g-ib, 32x100g-efa, "
    "8x400g-roce, 2x100g-eth, or none.": (
        "Rede desconhecida {text!r}. Como corrigir: escreva NICs por servidor x taxa de linha e tipo, p. ex. "
        "8x400g-ib, 32x100g-efa, 8x400g-roce, 2x100g-eth, ou none."
    ),
    "{gpus} GPUs span {units} servers, and no network joins them. To fix: name the fabric between the servers "
    "(--fabric, e.g. 8x400g-ib), or plan at most one server's GPUs.": (
        "{gpus} GPUs ocupam {units} servidores, e nenhuma rede os une. Como corrigir: indique a rede entre os "
        "servidores (--fabric, p. ex. 8x400g-ib), ou planeje no máximo as GPUs de um servidor."
    ),
    "The {gpu} has no NVLink. To fix: use --interconnect pcie.": (
        "A {gpu} não tem NVLink. Como corrigir: use --interconnect pcie."
    ),
    "--tp {t} spans servers; tensor parallelism needs one NVLink domain. To fix: --tp <= {gpus_per_server}, and "
    "data parallelism (ZeRO) across servers.": (
        "--tp {t} ocupa mais de um servidor; o paralelismo de tensor precisa de um só domínio NVLink. Como corrigir: "
        "--tp <= {gpus_per_server}, e paralelismo de dados (ZeRO) entre os servidores."
    ),
    "The {gpu} has no FP8 tensor cores. To fix: use --precision bf16-mixed, or a GPU with FP8 (Ada: L4, L40S; "
    "Hopper: H100, H200; Blackwell).": (
        "A {gpu} não tem tensor cores FP8. Como corrigir: use --precision bf16-mixed, ou uma GPU com FP8 (Ada: L4, "
        "L40S; Hopper: H100, H200; Blackwell)."
    ),
    "Unknown interconnect {interconnect!r}. To fix: use nvlink or pcie.": (
        "Interconexão desconhecida {interconnect!r}. Como corrigir: use nvlink ou pcie."
    ),
    "--mfu must be in (0, 1], got {mfu}.": "--mfu deve estar em (0, 1], não {mfu}.",
    "--tokens must not be negative.": "--tokens não pode ser negativo.",
    # plan shared: the seed article's dedicated-vs-shared table (plan/shared.py, cli/app.py)
    "{model} on {gpu}: dedicated vs shared ({how})": "{model} em {gpu}: dedicada vs compartilhada ({how})",
    "MIG {profile}": "MIG {profile}",
    "time slice with {n} neighbour(s)": "fatias de tempo com {n} vizinho(s)",
    "aspect": "aspecto",
    "shared": "compartilhado",
    "VRAM available": "VRAM disponível",
    "100 %: {memory_gib:,.1f} GiB (job needs {peak_gib:,.1f})": (
        "100 %: {memory_gib:,.1f} GiB (o job precisa de {peak_gib:,.1f})"
    ),
    "{share:.0f} %: {memory_gib:,.1f} GiB, job {fit}": "{share:.0f} %: {memory_gib:,.1f} GiB, o job {fit}",
    "does NOT fit": "NÃO cabe",
    "Training time": "Tempo de treino",
    "{hours:,.1f} h, predictable": "{hours:,.1f} h, previsível",
    "{hours:,.1f} h expected, varies with the neighbours": "{hours:,.1f} h esperadas, varia com os vizinhos",
    "Interruptions": "Interrupções",
    "none from neighbours": "nenhuma vinda de vizinhos",
    "{interruptions:,.2f} expected, {lost_hours:,.1f} h of work lost (checkpoint every {minutes:,.0f} min "
    "to minimise it)": (
        "{interruptions:,.2f} esperadas, {lost_hours:,.1f} h de trabalho perdidas (checkpoint a cada "
        "{minutes:,.0f} min para reduzi-las ao mínimo)"
    ),
    "NVLink between GPUs": "NVLink entre GPUs",
    "no (this GPU has none)": "não (esta GPU não tem)",
    "no (MIG instances have no peer NVLink)": "não (instâncias MIG não têm NVLink entre pares)",
    "Data isolation": "Isolamento dos dados",
    "total (whole GPU, whole server)": "total (GPU inteira, servidor inteiro)",
    "memory and SMs partitioned in hardware": "memória e SMs particionados no hardware",
    "none between time slices": "nenhum entre fatias de tempo",
    # plan infer (cli/render.py)
    "{model} inference, {weights} weights on {gpu}": "{model}: inferência, pesos em {weights}, na {gpu}",
    "KV cache ({batch} × {context:,} tokens, {kib_per_token:,.0f} KiB/token)": (
        "cache KV ({batch} × {context:,} tokens, {kib_per_token:,.0f} KiB/token)"
    ),
    "Decode ≤ {tokens_per_s:,.0f} tokens/s for the batch (≥ {ms:,.1f} ms per step at {hbm_gb_s:,.0f} GB/s)": (
        "Decodificação ≤ {tokens_per_s:,.0f} tokens/s para o lote (≥ {ms:,.1f} ms por passo a {hbm_gb_s:,.0f} GB/s)"
    ),
    # treino gpus, treino models (cli/render.py)
    "GPU catalog (dense TFLOP/s; source and date per row: treino gpus --json)": (
        "Catálogo de GPUs (TFLOP/s densos; fonte e data de cada linha: treino gpus --json)"
    ),
    "HBM GB/s": "HBM GB/s",
    "bf16 / fp8 TF": "bf16 / fp8 TF",
    "GPU link, PCIe": "conexão GPU-GPU, PCIe",
    "no NVLink": "sem NVLink",
    "TDP W": "TDP W",
    "{gb:g} GB": "{gb:g} GB",
    "{gb_s:,.0f} GB/s": "{gb_s:,.0f} GB/s",
    "Model presets (Hugging Face config.json files; source per file)": (
        "Modelos pré-definidos (arquivos config.json do Hugging Face; fonte em cada arquivo)"
    ),
    "params": "parâm.",
    "layers": "camadas",
    "hidden": "oculta",
    "heads/kv": "cab./kv",
    "vocab": "vocab.",
    "tied": "atadas",
}
