;; fdbomb: renumbers stdin to descriptor 0x7fffffff (the host grew its
;; descriptor table to that index: 16 GiB), then reports the WASI errno it
;; got as {"errno":"NN"} and exits 0.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_renumber" (func $fd_renumber (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "{\"errno\":\"00\"}")
  ;; benign: an input object with a key is echoed back (see exit3.wat).
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
    (local $e i32)
    (if (call $benign) (then (return)))
    (local.set $e (call $fd_renumber (i32.const 0) (i32.const 0x7fffffff)))
    ;; two decimal digits of the errno at offsets 74 and 75
    (i32.store8 (i32.const 74) (i32.add (i32.const 48) (i32.div_u (local.get $e) (i32.const 10))))
    (i32.store8 (i32.const 75) (i32.add (i32.const 48) (i32.rem_u (local.get $e) (i32.const 10))))
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 14))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
