;; stderr: writes 20,000 log lines (800 KB) to stderr, then {} to stdout.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "a chatty log line of 40 bytes..........\n")
  (data (i32.const 200) "{}")
  ;; benign: an input object with a key (second byte '"', e.g.
  ;; {"benign":true}) is echoed back and the guest exits 0; "{}" runs the
  ;; adversarial behaviour below. This lets a test check that the next
  ;; call on the same prepared tool succeeds.
  (func $benign (result i32)
    (local $n i32)
    (i32.store (i32.const 4096) (i32.const 8192))
    (i32.store (i32.const 4100) (i32.const 4096))
    (drop (call $fd_read (i32.const 0) (i32.const 4096) (i32.const 1) (i32.const 4104)))
    (local.set $n (i32.load (i32.const 4104)))
    (if (result i32) (i32.and (i32.gt_u (local.get $n) (i32.const 1))
                              (i32.eq (i32.load8_u (i32.const 8193)) (i32.const 34)))
      (then
        (i32.store (i32.const 4100) (local.get $n))
        (drop (call $fd_write (i32.const 1) (i32.const 4096) (i32.const 1) (i32.const 4104)))
        (i32.const 1))
      (else (i32.const 0))))
  (func (export "_start")
    (local $i i32)
    (if (call $benign) (then (return)))
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 40))
    (loop $log
      (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $log (i32.lt_u (local.get $i) (i32.const 20000))))
    (i32.store (i32.const 0) (i32.const 200))
    (i32.store (i32.const 4) (i32.const 2))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
