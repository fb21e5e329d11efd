;; A call-free infinite loop: only instrumentation (or wazero's
;; CloseOnContextDone) can stop it.
(module
  (func (export "spin")
    (loop $l (br $l))))
