;; sleep: blocks in poll_oneoff on a 60 s relative clock, then writes {}.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
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
    (if (call $benign) (then (return)))
    ;; subscription at 0: userdata 0, tag 0 (clock), clock id 1
    ;; (monotonic), timeout 60e9 ns, precision 0, flags 0 (relative).
    (i64.store (i32.const 0) (i64.const 0))
    (i32.store8 (i32.const 8) (i32.const 0))
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.const 60000000000))
    (i64.store (i32.const 32) (i64.const 0))
    (i32.store16 (i32.const 40) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
    (i32.store (i32.const 136) (i32.const 200))
    (i32.store (i32.const 140) (i32.const 2))
    (drop (call $fd_write (i32.const 1) (i32.const 136) (i32.const 1) (i32.const 144)))))
