// The one table of trident's subcommands: each one's command line (options, required
// options, positional arguments), --help texts, whether it runs under MPI, and its function.
#include "cli/commands.h"

namespace trident::cli {
namespace {

// Names for the table's bool fields.
constexpr bool kRequired = true;   // OptionSpec::required
constexpr bool kList = true;       // OptionSpec::list
constexpr bool kNoConfig = false;  // CommandSpec::reads_config
constexpr bool kMpi = true;        // Command::uses_mpi
constexpr bool kNoMpi = false;
constexpr bool kPreemptible = true;  // Command::preemptible

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {{"train",
        "mpirun -np N trident train CONFIG.toml [--set section.key=value ...]\n"
        "       mpirun -np N trident train CONFIG.toml --auto --cluster FILE "
        "[--memory-per-rank GB]\n"
        "                                       [--disk-per-rank GB] [--measure K] [--set ...]",
        "Trains the model of CONFIG with the layout parallel.dp x parallel.pp x parallel.tp,\n"
        "which must multiply to the number of ranks N (parallel.dp may be left out and is then\n"
        "derived). Rank 0 prints progress every train.log_every steps and writes one JSON line\n"
        "per logged step to logging.metrics; logging.trace receives a Chrome trace of the\n"
        "pipeline instructions; checkpoints go to checkpoint.dir every checkpoint.save_every\n"
        "steps and at the end (logging.run_dir gathers all three). checkpoint.load resumes.\n"
        "--auto (or parallel.auto = true) chooses dp, pp, tp, the ZeRO stage, the nvme tier's\n"
        "use (when parallel.nvme_path is set), the micro-batch size, the recomputation (none,\n"
        "selective, full), sequence parallelism and the pipeline schedule: the fastest the\n"
        "planner predicts on the N ranks of the calibrated machine (--cluster, from trident\n"
        "calibrate) under the memory each rank has (the cgroup limit or MemAvailable, shared\n"
        "by a node's ranks; --memory-per-rank overrides) less a 10% margin. --measure K\n"
        "trains the K best predicted for 5 steps in each of two passes of alternating order\n"
        "and keeps the fastest measured. It prints the choice, the runner-up and why it lost,\n"
        "how many others are predicted within 5% (near ties that --measure settles), and\n"
        "writes the resolved config to logging.run_dir/resolved_config.toml. See\n"
        "docs/planner.md.",
        {{"auto", "", "choose the layout, ZeRO stage, offload, micro-batch and recomputation"},
         {"measure", "K",
          "with --auto: time the K best predicted configurations and keep the fastest"},
         {"cluster", "FILE|NAME", "with --auto: the machine's calibration (trident calibrate)"},
         {"memory-per-rank", "GB", "with --auto: memory per rank (default: measured)"},
         {"disk-per-rank", "GB",
          "with --auto: disk per rank for the nvme tier (default: free space of nvme_path)"}},
        1,
        1,
        "CONFIG.toml"},
       kMpi,
       "train a model from a TOML config (under mpirun for many ranks)",
       cmd_train,
       kPreemptible},
      {{"check",
        "trident check CONFIG.toml [--world N] [--set section.key=value ...]",
        "Validates CONFIG (unknown keys, types, ranges, and the layout cross-checks) without\n"
        "training, then prints the resolved config (every key, defaults filled in) and which\n"
        "rank holds which part of the grid. --world N checks the layout for an N-rank job\n"
        "(default: dp*pp*tp from the config, dp taken as 1 when left out).",
        {{"world", "N", "number of ranks the job will have"}},
        1,
        1,
        "CONFIG.toml"},
       kNoMpi,
       "validate a config and print the resolved config and layout",
       cmd_check},
      {{"schedule",
        "trident schedule --pp P --micro-batches M\n"
        "                        [--schedule 1f1b|gpipe|interleaved-1f1b|zb-h1]\n"
        "                        [--virtual-stages V] [--full] [--forward-cost F]\n"
        "                        [--backward-cost B]",
        "Prints the pipeline schedule of every stage, checks all stages together\n"
        "(every send meets its receive, no deadlock) and reports the bubble.",
        {{"pp", "P", "number of pipeline stages", kRequired},
         {"micro-batches", "M", "micro-batches per optimizer step", kRequired},
         {"schedule",
          "NAME",
          "1f1b (default), gpipe, interleaved-1f1b or zb-h1",
          false,
          false,
          {"1f1b", "gpipe", "interleaved-1f1b", "zb-h1"}},
         {"virtual-stages", "V", "model chunks per stage (interleaved-1f1b; default 1)"},
         {"full", "", "also print every instruction, sends and receives included"},
         {"forward-cost", "F", "time of one forward (default 1)"},
         {"backward-cost", "B",
          "time of one backward (default 2); zb-h1's B and W halves take half each"}},
        0,
        0,
        "",
        kNoConfig},
       kNoMpi,
       "print and check a pipeline schedule",
       cmd_schedule},
      {{"convert",
        "[mpirun -np N] trident convert --in CKPT --out DIR [--set section.key=value ...]",
        "Writes the checkpoint CKPT (a step directory, a directory with a `latest` file, or a\n"
        "Hugging Face directory) as a new checkpoint DIR laid out for the layout of CKPT's\n"
        "config with the --set overrides applied (parallel.dp, parallel.pp, parallel.tp,\n"
        "parallel.zero_stage, parallel.bucket_size): one file per target rank, named by its\n"
        "coordinates, holding exactly what that rank would save. Any number of processes can\n"
        "share the work. DIR must not exist.",
        {{"in", "CKPT", "the checkpoint to convert", kRequired},
         {"out", "DIR", "the new checkpoint directory", kRequired}},
        0,
        0,
        ""},
       kMpi,
       "re-split a checkpoint for another layout (one file per rank)",
       cmd_convert},
      {{"inspect",
        "trident inspect CKPT [--verify]",
        "Prints the index of the checkpoint CKPT (a step directory, a directory with a `latest`\n"
        "file, or a Hugging Face directory): step, trainer state, model, the layout it was\n"
        "written in, its files and every tensor with shape, dtype, number of slices and bytes.\n"
        "--verify reads every file and checks its size and checksum.",
        {{"verify", "", "check every file's checksum"}},
        1,
        1,
        "CKPT"},
       kNoMpi,
       "print a checkpoint's step, layout, tensors and sizes",
       cmd_inspect},
      {{"export",
        "trident export --in CKPT --out DIR --format hf",
        "Writes DIR/model.safetensors and DIR/config.json that Hugging Face loads as is, for\n"
        "the checkpoint's model family. GPT-2 (GPT2LMHeadModel): its parameter names, Conv1D\n"
        "layout ([in, out]), fused QKV order (all q heads, then k, then v), float32, the\n"
        "vocabulary padding removed and the tied head left out. Llama (LlamaForCausalLM): its\n"
        "parameter names, the checkpoint's dtype (so that export and import round-trip), the\n"
        "vocabulary padding removed, lm_head.weight only when the embedding is untied. DIR\n"
        "must not exist (or be empty). One process does the work.",
        {{"in", "CKPT", "the checkpoint to export", kRequired},
         {"out", "DIR", "the directory to write", kRequired},
         {"format", "FORMAT", "hf (the only format)"}},
        0,
        0,
        ""},
       kMpi,
       "write a checkpoint as Hugging Face GPT-2 or Llama files",
       cmd_export},
      {{"eval",
        "[mpirun -np N] trident eval --checkpoint CKPT --data FILE --sequences K [--seq-len T]\n"
        "                           [--micro-batch B] [--set section.key=value ...]",
        "Prints {\"loss\": L, \"tokens\": K*T}: the mean next-token cross-entropy of CKPT's model\n"
        "over the first K windows of the token file FILE, window i being tokens [i*T, i*T+T]\n"
        "(the first T are inputs, the last T targets). The model comes from the checkpoint's\n"
        "stored config, or from a Hugging Face config.json; T defaults to its model.seq_len.\n"
        "Runs on one rank or any layout: --set parallel.pp=2 --set parallel.tp=2 (dp is\n"
        "derived from the ranks); --set train.precision=fp64 to compute in float64.",
        {{"checkpoint", "CKPT", "trident checkpoint or Hugging Face directory", kRequired},
         {"data", "FILE", "token file (llm.c shard, Megatron dataset, raw uint16)", kRequired},
         {"sequences", "K", "number of windows", kRequired},
         {"seq-len", "T", "window length (default: model.seq_len)"},
         {"micro-batch", "B", "windows per forward (default 4)"}},
        0,
        0,
        ""},
       kMpi,
       "mean next-token loss of a checkpoint on a token file, any layout",
       cmd_eval},
      {{"batch",
        "trident batch CONFIG.toml --step N [--sequence I] [--tokens K] [--json]\n"
        "                          [--tokenizer byte|gpt2 [--vocab vocab.json --merges "
        "merges.txt]]\n"
        "                          [--set section.key=value ...]",
        "Prints where each sequence of step N's global batch comes from, as training reads it\n"
        "(after data.skip's windows): its index, source, epoch (and, in brackets, the epochs of\n"
        "that source read so far), window and file offset, and its first K tokens (default\n"
        "16), decoded with --tokenizer. --json prints one object with every token of each\n"
        "sequence. Only the data keys, train.seed, train.global_batch_size and model.vocab and\n"
        "seq_len matter, so the answer is the same for every layout. One process, no mpirun.\n"
        "See docs/data.md.",
        {{"step", "N", "the training step (from 1)", kRequired},
         {"sequence", "I", "only sequence I of the global batch (from 0)"},
         {"tokens", "K", "tokens to print of each sequence (default 16)"},
         {"tokenizer",
          "byte|gpt2",
          "decode the tokens: byte, or GPT-2's BPE (with --vocab and --merges)",
          false,
          false,
          {"byte", "gpt2"}},
         {"vocab", "vocab.json", "gpt2: the tokenizer's vocab.json"},
         {"merges", "merges.txt", "gpt2: the tokenizer's merges.txt"},
         {"json", "", "print one JSON object with every token of each sequence"}},
        1,
        1,
        "CONFIG.toml"},
       kNoMpi,
       "print the source, epoch, window and tokens of each sequence of a step",
       cmd_batch},
      {{"plan",
        "trident plan CONFIG.toml --devices N [--cluster FILE|NAME] [--top K] [--json]\n"
        "       trident plan CONFIG.toml --layout dp,pp,tp[,zero[,micro[,ckpt]]] [--cluster ...] "
        "[--json]\n"
        "       trident plan CONFIG.toml --auto --devices N [--memory-per-rank GB] "
        "[--disk-per-rank GB] [--cluster ...]\n"
        "       trident plan CONFIG.toml --memory GB [--disk GB] [--layout "
        "dp,pp,tp[,zero[,micro]]] "
        "[--cluster ...] [--json]",
        "Predicts, for CONFIG's model and global batch on N devices, the memory per device\n"
        "(parameters, gradients, optimizer states, activations, communication buffers) and the\n"
        "step time (compute, tp / pp / dp communication, pipeline bubble, optimizer) of every\n"
        "layout: dp x pp x tp = N, ZeRO stage, micro-batch size, activation checkpointing. Lists\n"
        "those that fit, fastest first, and says why the best wins. --layout evaluates one\n"
        "layout (zero, micro and ckpt default to the config's; ckpt is none or full).\n"
        "--cluster takes a cluster TOML file or a preset name (a100-80gb, h100, h200, example,\n"
        "from configs/clusters/); default h100. The model is in docs/planner.md. Exit code 1\n"
        "when no layout fits.\n"
        "--memory (and --disk) say instead how many layers of CONFIG's width train on one\n"
        "machine with that much memory (and disk for the nvme tier), shared by its ranks of\n"
        "the layout (--layout, else the config's), with full recomputation: with the states\n"
        "in memory, with the optimizer's states and gradients in the tier, and with everything\n"
        "there (ZeRO 3); each with its predicted peak RSS, tier size and step time. Give a\n"
        "calibrated --cluster (trident calibrate --disk-dir) for the process base and the disk.\n"
        "Exit code 1 when not even one layer fits.",
        {{"devices", "N", "number of devices (ranks) to plan for"},
         {"cluster", "FILE|NAME", "cluster file or preset name (default h100)"},
         {"top", "K", "show the K fastest layouts (default 10; with --auto, the K best)"},
         {"json", "", "print JSON (bytes, seconds) instead of tables"},
         {"layout", "dp,pp,tp[,zero[,micro[,ckpt]]]", "evaluate exactly this layout"},
         {"zero-stages", "LIST", "ZeRO stages to consider (default 0,1,2,3)"},
         {"memory", "GB", "the largest model for a machine with this much memory (1e9 bytes)"},
         {"disk", "GB", "with --memory: the machine's disk for the nvme tier (default unbounded)"},
         {"auto", "",
          "with --devices: the one configuration trident train --auto would choose, its "
          "runner-up and why it lost, and its near ties"},
         {"memory-per-rank", "GB", "with --auto: memory per rank (default: the cluster's)"},
         {"disk-per-rank", "GB",
          "with --auto: disk per rank for the nvme tier (default: free space of nvme_path)"},
         {"devices-per-node", "N", "override the cluster's devices per node"},
         {"placement", "block|cyclic",
          "how ranks fill nodes: block (consecutive ranks on a node, mpirun --map-by slot) "
          "or cyclic (round robin, --map-by node); default: the cluster's, else block"}},
        1,
        1,
        "CONFIG.toml"},
       kNoMpi,
       "predict memory and step time of every layout on N devices, rank them",
       cmd_plan},
      {{"calibrate",
        "mpirun -np N trident calibrate [--out FILE] [--threads T] [--name NAME] [--rounds R]\n"
        "                               [--disk-dir DIR] [--quick]\n"
        "trident calibrate --merge FILE... [--out FILE] [--name NAME]",
        "Measures the machines of the job's N ranks, all running at once: fp32 and fp64\n"
        "matmul rates by size, what a weight costs each micro-batch beyond its FLOPs, the\n"
        "memory bandwidth, trident's AdamW update per element, the fixed and elementwise costs\n"
        "of trident's own GPT block and of the model's ends, how much ranks computing at once\n"
        "slow each other ([contention]), a send and a receive at once between pairs of ranks\n"
        "on one node (1 KiB to 64 MiB) and, on several nodes (host names), between nodes (1 KiB\n"
        "to 4 MiB; pairs, and a ring through the nodes), the wait of a collective between ranks\n"
        "that compute in between, fixed (sync_us) and growing with the compute since the last\n"
        "one (sync_fraction), how much of a gradient reduction over every rank hides behind\n"
        "a block's backward (the reduce-scatter of ZeRO 1-3: dp_overlap; ZeRO 0's all-reduce:\n"
        "all_reduce_overlap),\n"
        "and the disk under --disk-dir for the nvme offload tier (256 MiB per rank, O_DIRECT),\n"
        "with the tier's own stream of an AdamW step timed against that step in memory.\n"
        "Writes a cluster file for `trident plan --cluster` (to FILE, or after the measurements\n"
        "on standard output, where they are comments): devices_per_node = the most ranks on a\n"
        "node, cores_per_node = a node's cores, or machine_cores when every node is this\n"
        "machine (scripts/cluster.sh's emulated nodes). Launch it as you will train: the same\n"
        "ranks per node and threads per rank. Each figure is the median of --rounds rounds,\n"
        "as step times are medians. --merge measures nothing: it keeps the median of each\n"
        "figure over cluster files it wrote before, such as calibrations taken between the\n"
        "runs of a scaling experiment (scripts/scale.sh --repeat), so that a slow or fast spell\n"
        "of the machine weighs on the prediction as it does on the runs. See docs/planner.md.",
        {{"out", "FILE", "write the cluster TOML here"},
         {"threads", "T", "intra-op threads per rank (default: cores / ranks, at least 1)"},
         {"name", "NAME", "the cluster's name in the file (default: here)"},
         {"rounds", "R",
          "measure R times, 5 s apart, keeping the median of each figure (default 2: their mean)"},
         {"disk-dir", "DIR",
          "where the disk bandwidth is measured: nvme_path's disk (default /tmp; none: skip)"},
         {"quick", "",
          "time each figure for a fifth as long: a rougher calibration (about 13 s a round on "
          "2 ranks of 2 cores instead of 48 s), for trying the tools"},
         {"merge", "FILE...", "measure nothing; write the median of these calibrations' figures",
          false, true}},
        0,
        0,
        ""},
       kMpi,
       "measure this machine's matmul rate and MPI links, write a cluster file",
       cmd_calibrate},
      {{"prepare-data",
        "trident prepare-data --in FILE... --out OUT.bin --tokenizer byte|gpt2 "
        "[--vocab vocab.json --merges merges.txt] [--append-eot]",
        "Tokenises the text files FILE... (in this order) into one llm.c token file OUT.bin (a\n"
        "1024-byte header, then uint16 tokens): the format data.source reads. --tokenizer byte\n"
        "makes one token per byte (train with model.vocab = 256); --tokenizer gpt2 applies\n"
        "GPT-2's byte-level BPE from the vocab.json and merges.txt of a Hugging Face download\n"
        "of gpt2 (model.vocab = 50257). Files are read in buffers, so they may be larger than\n"
        "memory, with a progress line on stderr. OUT.bin is written as OUT.bin.tmp and renamed\n"
        "when complete; on an error it is left as it was. See docs/real-data.md.",
        {{"in", "FILE...", "text files to tokenise (several after one --in, or --in repeated)",
          kRequired, kList},
         {"out", "OUT.bin", "the llm.c token file to write", kRequired},
         {"tokenizer", "byte|gpt2", "byte: one token per byte; gpt2: GPT-2's byte-level BPE",
          kRequired},
         {"vocab", "vocab.json", "gpt2: the tokenizer's vocab.json (token -> id)"},
         {"merges", "merges.txt", "gpt2: the tokenizer's merges.txt (merges in rank order)"},
         {"append-eot", "", "end each file with end-of-text (gpt2: <|endoftext|>; byte: 0)"},
         {"buffer-kib", "N", "read N KiB at a time (default 1024)"}},
        0,
        0,
        "",
        kNoConfig},
       kNoMpi,
       "tokenise text files into an llm.c token file (byte or GPT-2 BPE)",
       cmd_prepare_data},
  };
  return table;
}

}  // namespace trident::cli
