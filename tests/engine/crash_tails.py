"""Crash tails users pasted in public vLLM and SGLang issues and pull requests (read through the
issue search index, December 2026), each with its source and what engine/crash.py must say:
the line of the exception that killed the process (prefixes removed, as the engine wrote it) and
whether the engine's words blame the KV-cache dtype.

The expected answers are decided by reading the engines' code, not the reader's output:
- vLLM's selector error (vllm/platforms/cuda.py get_attn_backend_cls): "kv-cache-dtype" where a
  backend's reasons are only "kv_cache_dtype not supported" (validate_configuration's reason for
  supports_kv_cache_dtype), "not-kv-cache-dtype" where each backend also has another reason;
- a message a release raises about the KV-cache dtype: "kv-cache-dtype";
- anything else (out of memory, CUDA errors, Triton's own fp8 errors, a pointer to another
  process's error): None, the engine's words do not name the dtype.

Each tail is the excerpt as pasted (markdown fences and the issue's prose dropped, a paste's common
indentation removed); "line" None where the tail holds no exception a reader could name.
TUNED rows were looked at while writing engine/crash.py; HELD_OUT rows were collected after it
and are run only by test_zz_crash_heldout.py (its rate is reported apart).
"""

DTYPE, NOT_DTYPE = "kv-cache-dtype", "not-kv-cache-dtype"

_DSV32 = ("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
          "dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, use_mla=True, has_sink=False, use_sparse=True, "
          "use_mm_prefix=False, attn_type=decoder). Reasons: {FLASH_ATTN_MLA: [sparse not supported, compute "
          "capability not supported, FlashAttention MLA not supported on this device], FLASHMLA: [sparse not "
          "supported, compute capability not supported, FlashMLA Sparse is only supported on Hopper and Blackwell "
          "devices.], FLASHINFER_MLA: [sparse not supported, compute capability not supported], TRITON_MLA: [sparse "
          "not supported], FLASHMLA_SPARSE: [compute capability not supported]}.")

TUNED = [
    {"url": "https://github.com/vllm-project/vllm/issues/31480", "engine": "vllm", "version": None,
     "tail": "(Worker_TP4_EP4 pid=2532) ERROR 12-29 15:21:11 [multiproc_executor.py:751] " + _DSV32 + "\n"
             "(Worker_TP4_EP4 pid=2532) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, "
             "terminating worker\n"
             "(Worker_TP1_EP1 pid=2529) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, "
             "terminating worker\n"
             "(Worker_TP6_EP6 pid=2534) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, "
             "terminating worker\n"
             "(Worker_TP2_EP2 pid=2530) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, "
             "terminating worker\n"
             "(Worker_TP5_EP5 pid=2533) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, "
             "terminating worker\n",
     "line": _DSV32, "blame": NOT_DTYPE},
    {"url": "https://github.com/vllm-project/vllm/issues/48406", "engine": "vllm", "version": None,
     "tail": "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=64, "
             "dtype=torch.bfloat16, kv_cache_dtype=fp8_ds_mla, block_size=None, use_mla=False, has_sink=False, "
             "use_sparse=False, use_mm_prefix=False, use_per_head_quant_scales=False, "
             "attn_type=AttentionType.DECODER, use_non_causal=True, use_batch_invariant=False, "
             "use_kv_connector=False). Reasons: {FLASH_ATTN: [kv_cache_dtype not supported], FLASHINFER: "
             "[kv_cache_dtype not supported], TRITON_ATTN: [kv_cache_dtype not supported], FLEX_ATTENTION: "
             "[kv_cache_dtype not supported], TURBOQUANT: [kv_cache_dtype not supported, non-causal attention not "
             "supported]}.\n",
     "line": "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=64, ",
     "blame": DTYPE},
    {"url": "https://github.com/vllm-project/vllm/pull/30195", "engine": "vllm", "version": None,
     "tail": "ValueError: Selected backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration. "
             "Reason: ['kv_cache_dtype not supported', 'sparse not supported']\n",
     "line": "ValueError: Selected backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration.",
     "blame": NOT_DTYPE},
    {"url": "https://github.com/vllm-project/vllm/pull/32795", "engine": "vllm", "version": None,
     "tail": "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this configuration. "
             "Reason: ['kv_cache_dtype not supported']\n",
     "line": "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this configuration.",
     "blame": DTYPE},
    {"url": "https://github.com/vllm-project/vllm/pull/30227", "engine": "vllm", "version": None,
     "tail": "ValueError: Selected backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration. "
             "Reason: ['sparse not supported']\n",
     "line": "ValueError: Selected backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration.",
     "blame": NOT_DTYPE},
    {"url": "https://github.com/gpustack/gpustack/issues/1800", "engine": "vllm", "version": None,
     "tail": "ERROR 04-17 15:10:09 [engine.py:448]   File \"/opt/conda/lib/python3.11/site-packages/vllm/worker/"
             "worker.py\", line 545, in raise_if_cache_size_invalid\n"
             "ERROR 04-17 15:10:09 [engine.py:448]     raise ValueError(\n"
             "ERROR 04-17 15:10:09 [engine.py:448] ValueError: The model's max seq len (8192) is larger than the "
             "maximum number of tokens that can be stored in KV cache (2400). Try increasing "
             "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
             "Process SpawnProcess-1:\n"
             "Traceback (most recent call last):\n"
             "  File \"/opt/conda/lib/python3.11/multiprocessing/process.py\", line 314, in _bootstrap\n"
             "    self.run()\n",
     "line": "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens",
     "blame": None},
    {"url": "https://github.com/SergiioB/intel-arc-pro-b70-inference-cookbook/issues/4", "engine": "vllm",
     "version": None,
     "tail": "(EngineCore pid=316)   File \"/opt/venv/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py\", "
             "line 758, in _check_enough_kv_cache_memory\n"
             "(EngineCore pid=316)     raise ValueError(\n"
             "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (100000), "
             "(4.26 GiB KV cach\n"
             "e is needed, which is larger than the available KV cache memory (4.25 GiB). Based on the avai\n",
     "line": "ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach",
     "blame": None},
    {"url": "https://github.com/sgl-project/sglang/issues/3713", "engine": "sglang", "version": None,
     "tail": "[2025-02-21 22:59:28 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
             "  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 1825, in "
             "run_scheduler_process\n"
             "    scheduler.event_loop_overlap()\n"
             "  File \"/usr/local/lib/python3.10/dist-packages/torch/cuda/streams.py\", line 100, in synchronize\n"
             "    super().synchronize()\n"
             "RuntimeError: CUDA error: an illegal memory access was encountered\n"
             "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.\n"
             "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
             "\n"
             "[2025-02-21 22:59:28] Received sigquit from a child proces. It usually mea\n",
     "line": "RuntimeError: CUDA error: an illegal memory access was encountered", "blame": None},
    {"url": "https://github.com/vllm-project/vllm-ascend/issues/8102", "engine": "vllm", "version": None,
     "tail": "(EngineCore_DP0 pid=184248) ERROR 04-09 21:20:56 [patch_core.py:70]            "
             "^^^^^^^^^^^^^^^^^^^^^^^^^\n"
             "(EngineCore_DP0 pid=184248) ERROR 04-09 21:20:56 [patch_core.py:70] RuntimeError: The Inner error is "
             "reported as above. The process exits for this inner error, and the current working operator name is "
             "ReshapeCacheOperation.\n"
             "(EngineCore_DP0 pid=184248) ERROR 04-09 21:20:56 [patch_core.py:70] Since the operator is called "
             "asynchronously, the stacktrace may be inaccurate. If you want to get the accurate stacktrace, please "
             "set the environment variable ASCEND_LAUNCH_BLOCKING=1.\n"
             "(EngineCore_DP0 pid=184248) ERROR 04-09 21:20:56 [patch_core.py:70] [ERROR] 2026-04-09-21:20:56 "
             "(PID:184248, Device:0, RankID:-1) ERR00100 PTA call acl api failed.\n"
             "(EngineCore_DP0 pid=184248) ERROR 04-09 21:20:56 [patch_core.py:70]\n"
             "(EngineCore_DP0 pid=184248) Process EngineCore_DP0:\n"
             "(APIServer pid=183889) ERROR 04-09 21:20:56 [async_llm.py:538] AsyncLLM output_handler failed.\n"
             "(APIServer pid=183889) ERROR 04-09 21:20:56 [async_llm.py:538] Traceback (most recent call last):\n",
     "line": "RuntimeError: The Inner error is reported as above. The process exits for this inner error",
     "blame": None},
    {"url": "https://github.com/vllm-project/vllm/issues/17581", "engine": "vllm", "version": "0.8.5",
     "tail": "ERROR 05-02 10:22:18 [core.py:396]   File \"/opt/conda/lib/python3.12/site-packages/vllm/v1/executor/"
             "multiproc_executor.py\", line 185, in collective_rpc\n"
             "ERROR 05-02 10:22:18 [core.py:396]     raise RuntimeError(\n"
             "ERROR 05-02 10:22:18 [core.py:396] RuntimeError: Worker failed with error 'at 1:0:\n",
     "line": "RuntimeError: Worker failed with error 'at 1:0:", "blame": None},
    {"url": "https://github.com/vllm-project/vllm/issues/7714", "engine": "vllm", "version": None,
     "tail": "  File \"/home/mgoin/venvs/vllm/lib/python3.10/site-packages/triton/language/semantic.py\", line 759, "
             "in cast\n"
             "    assert builder.options.allow_fp8e4nv, \"fp8e4nv data type is not supported on CUDA arch < 89\"\n"
             "AssertionError: fp8e4nv data type is not supported on CUDA arch < 89\n"
             "\n"
             "The above exception was the direct cause of the following exception:\n"
             "\n"
             "Traceback (most recent call last):\n"
             "  File \"/home/mgoin/code/vllm/vllm/entrypoints/openai/rpc/server.py\", line 115, in generate\n"
             "    async for request_output in results_generator:\n",
     "line": "AssertionError: fp8e4nv data type is not supported on CUDA arch < 89", "blame": None},
    {"url": "https://github.com/LMCache/LMCache/issues/2306", "engine": "vllm", "version": None,
     "tail": "(APIServer pid=25389)   File \"/content/blend/.venv/lib/python3.12/site-packages/vllm/v1/engine/utils.py\","
             " line 1031, in wait_for_engine_startup\n"
             "(APIServer pid=25389)     raise RuntimeError(\n"
             "(APIServer pid=25389) RuntimeError: Engine core initialization failed. See root cause above. Failed "
             "core proc(s): {}\n",
     "line": "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
     "blame": None},
]

HELD_OUT = [
    {"url": "https://github.com/noonghunna/club-3090/issues/60", "engine": "vllm", "version": None,
     "tail": "(EngineCore pid=77) ERROR 05-05 07:35:19 [core.py:1136]   File \"/usr/local/lib/python3.12/dist-packages/"
             "torch/_ops.py\", line 1269, in __call__\n"
             "(EngineCore pid=77) ERROR 05-05 07:35:19 [core.py:1136]     return self._op(*args, **kwargs)\n"
             "(EngineCore pid=77) ERROR 05-05 07:35:19 [core.py:1136]            ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
             "(EngineCore pid=77) ERROR 05-05 07:35:19 [core.py:1136] RuntimeError: CUDA driver error: out of memory\n"
             "(EngineCore pid=77) Traceback (most recent call last):\n"
             "(EngineCore pid=77)   File \"/usr/lib/python3.12/multiprocessing/process.py\", line 314, in _bootstrap\n"
             "(EngineCore pid=77)     self.run()\n"
             "(EngineCore pid=77)   File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", line 1140, "
             "in run_engine_core\n"
             "(EngineCore pid=77)     raise e\n",
     "line": "RuntimeError: CUDA driver error: out of memory", "blame": None},
    {"url": "https://github.com/noonghunna/club-3090/issues/16", "engine": "vllm", "version": None,
     "tail": "(EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. "
             "Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 21.75 MiB is free.\n"
             "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.\n"
             "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] Traceback (most recent call last):\n"
             "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699]   File \"/usr/local/lib/python3.12/dist-packages/"
             "vllm/v1/engine/async_llm.py\", line 655, in output_handler\n"
             "(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699]     outputs = await "
             "engine_core.get_output_async()\n",
     "line": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB.", "blame": None},
    {"url": "https://github.com/vllm-project/vllm/issues/54219", "engine": "vllm", "version": None,
     "tail": "(EngineCore pid=259) ERROR 08-28 14:35:46 core.py:1346]   File \"/usr/local/lib/python3.12/dist-packages/"
             "vllm/v1/executor/multiproc_executor.py\", line 434, in get_response\n"
             "(EngineCore pid=259) ERROR 08-28 14:35:46 core.py:1346]     raise RuntimeError(\n"
             "(EngineCore pid=259) ERROR 08-28 14:35:46 core.py:1346] RuntimeError: Worker failed with error 'at 1:0:\n"
             "(EngineCore pid=259) ERROR 08-28 14:35:46 core.py:1346] def fused_moe_kernel(\n"
             "(EngineCore pid=259) ERROR 08-28 14:35:46 core.py:1346] ^\n"
             "(EngineCore pid=259) ERROR 08-28 14:35:46 core.py:1346] ValueError(\"type fp8e4nv not supported in this "
             "architecture. The supported fp8 dtypes are ('fp8e4b\n",
     "line": "RuntimeError: Worker failed with error 'at 1:0:", "blame": None},
    {"url": "https://github.com/vllm-project/vllm/issues/27508", "engine": "vllm", "version": None,
     "tail": "(APIServer pid=223598)   File \"/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/engine/"
             "utils.py\", line 785, in wait_for_engine_startup\n"
             "(APIServer pid=223598)     raise RuntimeError(\"Engine core initialization failed. \"\n"
             "(APIServer pid=223598)                        \"See root cause above. \"\n"
             "(APIServer pid=223598)                        f\"Failed core proc(s): {finished}\")\n"
             "(APIServer pid=223598) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
             "proc(s): {}\n",
     "line": "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
     "blame": None},
    {"url": "https://github.com/1CatAI/1Cat-vLLM/issues/27", "engine": "vllm", "version": None,
     "tail": "(Worker_TP0 pid=60352) ERROR 05-06 06:47:41 [multiproc_executor.py:852] ValueError(\"type fp8e4nv not "
             "supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n",
     "line": None, "blame": None},
    {"url": "https://github.com/vllm-project/vllm/issues/23176", "engine": "vllm", "version": None,
     "tail": "(APIServer pid=1179246)   File \"/home/ss345/vllm-local-build/vllm/vllm/v1/engine/utils.py\", line 759, in "
             "wait_for_engine_startup\n"
             "(APIServer pid=1179246)     raise RuntimeError(\"Engine core initialization failed. \"\n"
             "(APIServer pid=1179246) RuntimeError: Engine core initialization failed. See root cause above. Failed "
             "core proc(s): {}\n"
             "(gan_vllm2) ss345@dell-5820:~/vllm-local-build/vllm$ \n",
     "line": "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
     "blame": None},
    {"url": "https://github.com/noonghunna/club-3090/issues/58", "engine": "vllm", "version": None,
     "tail": "(APIServer pid=1) ERROR 05-05 12:36:59 [serving.py:1173] vllm.v1.engine.exceptions.EngineDeadError: "
             "EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
             "(EngineCore pid=104) Process EngineCore:\n"
             "(EngineCore pid=104) Traceback (most recent call last):\n"
             "(EngineCore pid=104)   File \"/usr/lib/python3.12/multiprocessing/process.py\", line 314, in _bootstrap\n"
             "(EngineCore pid=104)     self.run()\n",
     "line": "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", "blame": None},
    {"url": "https://github.com/yhfgyyf/vllm-deepseek-v4-sm89/issues/34", "engine": "vllm", "version": None,
     "tail": "(Worker_TP0 pid=188601) ERROR 07-16 12:53:02 [multiproc_executor.py:1007]     return "
             "type_canonicalisation_dict[dtype_str]\n"
             "(Worker_TP0 pid=188601) ERROR 07-16 12:53:02 [multiproc_executor.py:1007]            "
             "~~~~~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^\n"
             "(Worker_TP0 pid=188601) ERROR 07-16 12:53:02 [multiproc_executor.py:1007] KeyError: 'float8_e8m0fnu'\n"
             "(Worker_TP0 pid=188601) ERROR 07-16 12:53:02 [multiproc_executor.py:1007] \n"
             "(EngineCore pid=188100) ERROR 07-16 12:53:02 [core.py:1231] EngineCore failed to start.\n"
             "(EngineCore pid=188100) ERROR 07-16 12:53:02 [core.py:1231] Traceback (most recent call last):\n",
     "line": "KeyError: 'float8_e8m0fnu'", "blame": None},
    {"url": "https://github.com/vllm-project/vllm/issues/26431", "engine": "vllm", "version": None,
     "tail": "(Worker_PP0_TP1_EP1 pid=34510) ERROR 04-12 01:50:23 [multiproc_executor.py:971] "
             "triton.compiler.errors.CompilationError: at 1:0:\n"
             "(Worker_PP0_TP1_EP1 pid=34510) ERROR 04-12 01:50:23 [multiproc_executor.py:971] def "
             "_w8a8_triton_block_scaled_mm(\n"
             "(Worker_PP0_TP1_EP1 pid=34510) ERROR 04-12 01:50:23 [multiproc_executor.py:971] ^\n"
             "(Worker_PP0_TP1_EP1 pid=34510) ERROR 04-12 01:50:23 [multiproc_executor.py:971] ValueError(\"type fp8e4nv "
             "not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n"
             "(Worker_PP0_TP1_EP1 pid=34510) ERROR 04-12 01:50:23 [multiproc_executor.py:971] \n"
             "(EngineCore pid=34474) ERROR 04-12 01:50:23 [core.py:1110] EngineCore failed to start.\n"
             "(EngineCore pid=34474) ERROR 04-12 01:50:23 [core.py:1110] Traceback (most recent call last):\n"
             "(EngineCore pid=34474) ERROR 04-12 01:50:23 [core.py:1110]   File \"/home/hubby/.venv/lib/python3.12/"
             "site-packages/vllm/v1/engine/core.py\", line 1084, in run_engine_core\n",
     "line": "triton.compiler.errors.CompilationError: at 1:0:", "blame": None},
    # the paste's first column (a multi-Pod log tool's "POD CONTAINER ") dropped: kubelet serves none
    {"url": "https://github.com/vllm-project/vllm/issues/57713", "engine": "vllm", "version": None,
     "tail": "(EngineCore pid=1122) ERROR 09-19 19:20:03 [core.py:1378] RuntimeError: Worker failed with error 'MLA "
             "kv_data_type torch.uint8 is not supported. Supported dtypes: [torch.float16, torch.bfloat16, "
             "torch.float8_e4m3fn].', please check the stack trace above for the root\n",
     "line": "RuntimeError: Worker failed with error 'MLA kv_data_type torch.uint8 is not supported.", "blame": None},
    {"url": "https://github.com/gpustack/gpustack/issues/3831", "engine": "sglang", "version": "0.5.6.post1",
     "tail": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
             "self.server_args.mem_fraction_static=0.2\n",
     "line": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "blame": None},
    {"url": "https://github.com/sgl-project/sglang/issues/165", "engine": "sglang", "version": None,
     "tail": "Exception in ModelRpcClient:\n"
             "Traceback (most recent call last):\n"
             "  File \"/workspace/sglang/python/sglang/srt/managers/router/infer_batch.py\", line 203, in "
             "prepare_for_extend\n"
             "    req_pool_indices_cpu = req_pool_indices.cpu().numpy()\n"
             "AttributeError: 'NoneType' object has no attribute 'cpu'\n",
     "line": "AttributeError: 'NoneType' object has no attribute 'cpu'", "blame": None},
]
