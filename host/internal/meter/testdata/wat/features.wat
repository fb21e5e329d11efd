;; Exercises what the pass must renumber or split: imported functions
;; (indices shift), a start function, call_indirect through an active
;; element segment, ref.func with a declarative segment, a funcref global,
;; multi-value blocks and if, br_table, select, passive data with
;; memory.init (data count section), bulk memory, sign extension,
;; saturating conversion, a loop with a parameter and a name section.
(module $features
  (import "env" "log" (func $log (param i32)))
  (type $binop (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $t 4 funcref)
  (global $g (mut i32) (i32.const 0))
  (global $fr funcref (ref.func $mul))
  (elem (table $t) (i32.const 0) func $add $mul $sub)
  (elem declare func $sub)
  (data $d "\01\02\03\04\05\06\07\08")
  (start $init)
  (func $init (global.set $g (i32.const 42)))
  (func $add (type $binop) (i32.add (local.get 0) (local.get 1)))
  (func $mul (type $binop) (i32.mul (local.get 0) (local.get 1)))
  (func $sub (type $binop) (i32.sub (local.get 0) (local.get 1)))
  (func $pair (param i32) (result i32 i32)
    (local.get 0) (i32.add (local.get 0) (i32.const 1)))
  ;; dispatch(op, a, b) applies table entry op (0 add, 1 mul, 2 sub),
  ;; chosen through br_table.
  (func $dispatch (export "dispatch") (param $op i32) (param $a i32) (param $b i32) (result i32)
    (block $sub
      (block $mul
        (block $add
          (br_table $add $mul $sub $sub (local.get $op)))
        (return (call_indirect (type $binop) (local.get $a) (local.get $b) (i32.const 0))))
      (return (call_indirect (type $binop) (local.get $a) (local.get $b) (i32.const 1))))
    (call_indirect (type $binop) (local.get $a) (local.get $b) (i32.const 2)))
  ;; multi(x) = x + (x+1) through a multi-value block and if.
  (func $multi (export "multi") (param $x i32) (result i32)
    (local.get $x)
    (call $pair)
    (block (param i32 i32) (result i32) (i32.add))
    (if (param i32) (result i32) (i32.gt_s (local.get $x) (i32.const 100))
      (then (i32.const 1) (i32.add))
      (else (i32.const 0) (i32.add))))
  ;; bulk(): memory.init the 8 passive bytes at 16, copy them to 32,
  ;; fill 40..44 with 9, and return the little-endian word at 36 plus the
  ;; word at 40.
  (func $bulk (export "bulk") (result i32)
    (memory.init $d (i32.const 16) (i32.const 0) (i32.const 8))
    (data.drop $d)
    (memory.copy (i32.const 32) (i32.const 16) (i32.const 8))
    (memory.fill (i32.const 40) (i32.const 9) (i32.const 4))
    (i32.add (i32.load (i32.const 36)) (i32.load (i32.const 40))))
  ;; misc(x) mixes select, sign extension, saturating conversion, the
  ;; start function's global, ref.func and the funcref global, and an
  ;; imported call.
  (func $misc (export "misc") (param $x i32) (result i32)
    (call $log (local.get $x))
    (i32.add
      (i32.add
        (select (i32.const 10) (i32.const 20) (local.get $x))
        (i32.extend8_s (i32.const 0xff)))
      (i32.add
        (i32.trunc_sat_f64_s (f64.const 1e12))
        (i32.add (global.get $g)
          (i32.add (ref.is_null (ref.func $sub)) (ref.is_null (global.get $fr)))))))
  ;; countdown(n) loops with a loop parameter (kept unwrapped by the pass):
  ;; returns n-k for the first k with n-k <= 0, i.e. 0 for n >= 1.
  (func $countdown (export "countdown") (param $n i32) (result i32)
    (local.get $n)
    (loop $l (param i32) (result i32)
      (i32.const 1)
      (i32.sub)
      (local.tee $n)
      (br_if $l (i32.gt_s (local.get $n) (i32.const 0))))))
