/**
 * Syntax tree of the MARTI language. A program is a pipeline of stages; the input value flows through them left to
 * right. Inside a stage's argument, `x` is the element (map, filter) or the current value (apply, take, drop, while).
 * `pos` is the character offset of the node's first token in the source text.
 */
import type { ArgStage, UnaryFunction } from './syntax';

export type BinaryOp = '+' | '-' | '*' | 'div' | 'mod' | '<' | '>' | '=' | 'and' | 'or';

export type Expr =
  | { k: 'num'; value: number; pos: number }
  | { k: 'bool'; value: boolean; pos: number }
  | { k: 'text'; value: string; pos: number }
  | { k: 'var'; pos: number }
  | { k: 'list'; items: Expr[]; pos: number }
  | { k: 'neg'; arg: Expr; pos: number }
  | { k: 'not'; arg: Expr; pos: number }
  | { k: 'bin'; op: BinaryOp; left: Expr; right: Expr; pos: number }
  | { k: 'if'; cond: Expr; then: Expr; else: Expr; pos: number }
  | { k: 'call'; fn: UnaryFunction; arg: Expr; pos: number };

export type Stage =
  | { k: 'fn'; fn: UnaryFunction; pos: number }
  | { k: Exclude<ArgStage, 'while'>; arg: Expr; pos: number }
  | { k: 'while'; cond: Expr; body: Expr; pos: number };

export interface Program {
  stages: Stage[];
}
