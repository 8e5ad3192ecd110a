"""The dialogue manager: which tool a line means, its values, the questions, read-backs and
replies, decided by rule from the profile (ADR-0020). It loads no model: it sits behind the LLM
port (:class:`vocero.inference.toolkit.llm.RoutedLlm` runs it) and imports no backend and no
engine library (ADR-0039)."""
