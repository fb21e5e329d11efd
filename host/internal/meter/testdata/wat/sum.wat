;; A tight compute loop for benchmarks: sum of (i*i mod 7) for i < n.
(module
  (func (export "sum") (param $n i64) (result i64) (local $i i64) (local $s i64)
    (block $done
      (loop $l
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $s (i64.add (local.get $s)
          (i64.rem_u (i64.mul (local.get $i) (local.get $i)) (i64.const 7))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $l)))
    local.get $s))
