# tests/trainer/lead.cmake — the trainer's data-parallel, checkpoint and program tests (included from
# tests/trainer/CMakeLists.txt).
mirror_add_test(test_checkpoint SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_checkpoint.cc LIBS mirror::train)
mirror_add_test(test_checkpoint_tokenizer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_checkpoint_tokenizer.cc
                LIBS mirror::train)
mirror_add_test(test_interchange SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_interchange.cc LIBS mirror::train)
mirror_add_test(test_grad_compression SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_grad_compression.cc LIBS mirror::train)
mirror_add_mpi_test(test_grad_sync SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_grad_sync.cc
                    LIBS mirror::train mirror::collectives NP 1 2 3 4 TIMEOUT 120)

# Script tests: real programs under mpirun on files made by mirror-data.
list(JOIN MIRROR_MPIEXEC_FLAGS " " _mirror_flags)
set(_mirror_script_env
  "TRAINER=$<TARGET_FILE:trainer>" "MIRROR_DATA=$<TARGET_FILE:mirror-data>" "MIRROR_EVAL=$<TARGET_FILE:mirror-eval>"
  "MIRROR_CKPT=$<TARGET_FILE:mirror-ckpt>" "MIRRORRUN=$<TARGET_FILE:mirrorrun>" "MPIEXEC=${MPIEXEC_EXECUTABLE}" "MPIEXEC_FLAGS=${_mirror_flags}")
foreach(script equivalence sync_bn cnn_resume weight_decay cnn_misfits resume bad_flags eval_ckpt restart preempt
        checkpoint_v1 telemetry model_files non_finite agreed_errors keep_best grad_dtype stop_signal lm lm_tokenizers
        interchange precision)
  add_test(NAME trainer.${script} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${script}.sh)
  set_tests_properties(trainer.${script} PROPERTIES ENVIRONMENT "${_mirror_script_env}" TIMEOUT 600 PROCESSORS 2)
endforeach()

# The fusion benchmark runs (its figures are for docs/benchmarks.md; here only that it works).
foreach(shared 0 1)
  add_test(NAME trainer.fusion_bench_shared${shared}.np2
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MIRROR_MPIEXEC_FLAGS}
                   $<TARGET_FILE:mirror-fusion-bench> --total-mb 1 --iters 2 --warmup 0 -R ${shared})
endforeach()
set_tests_properties(trainer.fusion_bench_shared0.np2 PROPERTIES TIMEOUT 120 PROCESSORS 2
                     PASS_REGULAR_EXPRESSION "ordinary buffer.*one per tensor +200")
set_tests_properties(trainer.fusion_bench_shared1.np2 PROPERTIES TIMEOUT 120 PROCESSORS 2
                     PASS_REGULAR_EXPRESSION "shared buffer.*one per tensor +200")

# The trainer's state plumbing (private headers of trainer/src) with a buffer-holding test layer.
mirror_add_mpi_test(test_state_transfer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_state_transfer.cc
                    LIBS mirror::train mirror::collectives NP 1 2 3 TIMEOUT 120)
target_include_directories(test_state_transfer PRIVATE ${PROJECT_SOURCE_DIR}/trainer/src)
# telemetry.sh and interchange.sh skip (77) only when tensorboard or safetensors cannot be installed into the
# project's Python environment.
set_tests_properties(trainer.telemetry trainer.interchange PROPERTIES SKIP_RETURN_CODE 77)
# precision.sh skips (77) after checking the refusal on a CPU where oneDNN has no bfloat16 kernels.
set_tests_properties(trainer.precision PROPERTIES SKIP_RETURN_CODE 77)

# The trainer must not link libsentencepiece: its bundled protobuf-lite symbols would shadow libprotobuf-lite's,
# which the TensorBoard writer calls (trainer/src/text_tokens.cc says how the link is kept apart).
add_test(NAME trainer.no_sentencepiece
         COMMAND bash -c "! readelf -d \"$<TARGET_FILE:trainer>\" | grep -q 'libsentencepiece'")
