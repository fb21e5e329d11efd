;; count(n) executes exactly 9n+7 instructions (block, loop, 9 per
;; iteration that goes on, 4 for the last test, the final local.get):
;; the reference for exact fuel accounting. boom(n) calls count(n) and
;; traps: 9n+11 instructions (local.get, call, drop, unreachable).
(module
  (func $count (export "count") (param $n i32) (result i32) (local $i i32)
    (block $done
      (loop $l
        local.get $i
        local.get $n
        i32.ge_s
        br_if $done
        local.get $i
        i32.const 1
        i32.add
        local.set $i
        br $l))
    local.get $i)
  (func (export "boom") (param $n i32) (result i32)
    (drop (call $count (local.get $n)))
    unreachable))
