//! Operator classification: which wasm proposal an operator comes from and its text name.

use wasmparser::Operator;

macro_rules! define_op_info {
    ($( @$proposal:ident $op:ident $({ $($arg:ident: $argty:ty),* })? => $visit:ident ($($ann:tt)*) )*) => {
        /// `(proposal, visit-method name)` of an operator, e.g. `("mvp", "visit_f64_add")`.
        fn op_info(op: &Operator<'_>) -> (&'static str, &'static str) {
            #[allow(unreachable_patterns)]
            match op {
                $( Operator::$op { .. } => (stringify!($proposal), stringify!($visit)), )*
                _ => ("unknown", "visit_unknown"),
            }
        }
    };
}
wasmparser::for_each_operator!(define_op_info);

/// Namespaces whose instructions are written `ns.rest` in the text format.
const NAMESPACES: &[&str] = &[
    "i32", "i64", "f32", "f64", "v128", "i8x16", "i16x8", "i32x4", "i64x2", "f32x4", "f64x2",
    "memory", "table", "elem", "data", "ref", "local", "global", "struct", "array", "any",
    "extern", "i31",
];

/// The proposal an operator belongs to (`mvp`, `bulk_memory`, `simd`, ...).
pub(crate) fn proposal(op: &Operator<'_>) -> &'static str {
    op_info(op).0
}

/// The text-format name of an operator, e.g. `f64.add`, `memory.init`, `return_call`.
pub(crate) fn name(op: &Operator<'_>) -> String {
    let visit = op_info(op).1;
    let snake = visit.strip_prefix("visit_").unwrap_or(visit);
    match snake.split_once('_') {
        Some((ns, rest)) if NAMESPACES.contains(&ns) => format!("{ns}.{rest}"),
        _ => snake.to_string(),
    }
}

/// Whether an MVP / saturating-conversion operator touches floats (all of them fail activation:
/// nitro has no soft-float implementation for user programs and the meter prices them u64::MAX).
pub(crate) fn is_float(op: &Operator<'_>) -> bool {
    let (proposal, visit) = op_info(op);
    matches!(proposal, "mvp" | "saturating_float_to_int")
        && (visit.contains("f32") || visit.contains("f64"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmparser::{BlockType, Ieee64};

    #[test]
    fn names() {
        assert_eq!(name(&Operator::F64Add), "f64.add");
        assert_eq!(name(&Operator::I32TruncSatF32S), "i32.trunc_sat_f32_s");
        assert_eq!(
            name(&Operator::MemoryInit {
                data_index: 0,
                mem: 0
            }),
            "memory.init"
        );
        assert_eq!(
            name(&Operator::ReturnCall { function_index: 0 }),
            "return_call"
        );
        assert_eq!(
            name(&Operator::Block {
                blockty: BlockType::Empty
            }),
            "block"
        );
    }

    #[test]
    fn floats() {
        assert!(is_float(&Operator::F64Const {
            value: Ieee64::from(0.0)
        }));
        assert!(is_float(&Operator::F32Abs));
        assert!(is_float(&Operator::I64TruncSatF64U));
        assert!(is_float(&Operator::I32ReinterpretF32));
        assert!(!is_float(&Operator::I32Add));
        assert!(!is_float(&Operator::I64Extend32S));
        assert_eq!(
            proposal(&Operator::MemoryCopy {
                dst_mem: 0,
                src_mem: 0
            }),
            "bulk_memory"
        );
    }
}
