;; echo: copies stdin (up to 63 KiB) to stdout and exits 0. The tiny
;; guest of the per-call benchmarks.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (local $total i32) (local $n i32)
    (block $done
      (loop $read
        ;; iov[0] = {1024 + total, 64512 - total}
        (i32.store (i32.const 0) (i32.add (i32.const 1024) (local.get $total)))
        (i32.store (i32.const 4) (i32.sub (i32.const 64512) (local.get $total)))
        (br_if $done (i32.ne (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)) (i32.const 0)))
        (local.set $n (i32.load (i32.const 16)))
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $total (i32.add (local.get $total) (local.get $n)))
        (br_if $read (i32.lt_u (local.get $total) (i32.const 64512)))))
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (local.get $total))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))))
