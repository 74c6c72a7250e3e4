"""Inside the learner's kernel: build their nn.Module class and run it on the grader's cases.

A module question (`t5lesson.grading.questions.module.ModuleCode`) hands this file's text to the
harvesting code (`t5lesson.grading.harvest`), which runs it in a fresh namespace and calls
`adapt(the learner's class)`. The function it returns is called once per case, like the
function of an ordinary code question, with the case's plain data (nested lists, numbers,
strings): it builds the module, loads the grader's weights, runs one *plan* and returns a
torch tensor, which the harvesting code turns into a plain array. Nothing is compared here:
the grader compares those arrays with transformers' T5Attention in its own process.

The contract the learner's class meets (exercise 6 states it; lesson 6 builds its self-attention part):

    layer = Cls(d_model=..., num_heads=..., d_kv=..., causal=..., has_relative_bias=...,
                num_buckets=..., max_distance=...)
    parameters named as in transformers: q.weight, k.weight, v.weight, o.weight
        (nn.Linear without bias terms) and relative_attention_bias.weight (nn.Embedding) when
        the layer owns the bias table
    output, position_bias, present = layer(hidden_states, attention_mask=None,
                                           position_bias=None, past_key_value=None, use_cache=False,
                                           key_value_states=None)
    with key_value_states (the encoder's output) the layer is cross-attention: keys and values
    from those states, no position bias, no causal mask, attention_mask the encoder's padding,
    and with a cache the encoder's keys and values are computed once and handed back as they are
    (plan "cross_steps" counts the calls of W_k and W_v after the first step: the outputs cannot tell);
    and exercise 6 goes one step beyond lesson 6's layer: `segment_ids` ([batch, seq_len], passed
    only in the packed-row cases, a full pass of self-attention) numbers the examples packed into
    one row, and a query attends only to the keys of its own example

Plans: "init" (the std of each projection right after construction), "full" (output of one
pass), "bias" (the position_bias a pass returns), "steps" (outputs of token-by-token decoding
with the cache, concatenated), "steps_bias" (the position_bias of the last cached step) and
"two_layers" (the output of a layer without a table, handed the bias of layer 0); a case with
`encoder` states is cross-attention: "full" (one pass) or "cross_steps" (a 2-token prompt, then
token by token, the cache handed back each step); a case with `segments` (packed rows) passes them
as `segment_ids`.

Self-contained: standard library only at import time (torch is imported when a case runs),
no relative imports, because it is run with `exec` from its source text; there the harvest hands
it `GradingSetupError`, which a plain import takes from `t5lesson.grading.harvest`.
"""


try:  # run from its source by the harvest (in the kernel, or by check()): the harvest's own class is given
    GradingSetupError  # noqa: B018  # pyright: ignore[reportUnboundVariable] (given by the harvest)
except NameError:  # imported as a module (by the exercise, by tests): the same class, from the engine
    from t5lesson.grading.harvest import GradingSetupError


PROJECTIONS = ("q", "k", "v", "o")


def _tensor(torch, data, dtype):
    return torch.tensor(data, dtype=dtype)


def _build(cls, config):
    try:
        return cls(**config)
    except TypeError as exc:
        raise GradingSetupError(
            f"{getattr(cls, '__name__', 'your class')}({', '.join(f'{k}={v!r}' for k, v in config.items())}) "
            f"failed: {exc}") from None


def _load(torch, module, weights):
    """Copy the grader's weights in; refuse a module whose names or shapes differ from T5's."""
    if not isinstance(module, torch.nn.Module):
        raise GradingSetupError("your class should be an nn.Module subclass")
    state = module.state_dict()
    for name in PROJECTIONS:
        if f"{name}.bias" in state:
            raise GradingSetupError(f"self.{name} has a bias term; T5's projections have none "
                                    "(nn.Linear(..., bias=False))")
    for name, values in weights.items():
        if name not in state:
            raise GradingSetupError(
                f"the module has no parameter {name}: name the projections self.q, self.k, self.v, self.o "
                "and the table self.relative_attention_bias, as transformers does")
        value = _tensor(torch, values, state[name].dtype)
        if tuple(state[name].shape) != tuple(value.shape):
            raise GradingSetupError(f"{name} has shape {tuple(state[name].shape)}; T5's has {tuple(value.shape)}")
        state[name] = value
    module.load_state_dict(state)
    return module.eval()


def _parts(result, torch):
    """(output, position_bias, present) from what forward returned."""
    if isinstance(result, torch.Tensor):
        return result, None, None
    if isinstance(result, (tuple, list)) and result:
        items = list(result)[:3]
        return tuple(items + [None] * (3 - len(items)))
    raise GradingSetupError("forward should return (output, position_bias, past_key_value)")


def _need(value, what, torch):
    if not isinstance(value, torch.Tensor):
        raise GradingSetupError(f"forward returned no tensor as its {what}; it should return "
                                "(output, position_bias, past_key_value)")
    return value


def adapt(cls):
    """The function the harvesting code calls for each case of a module question: it builds the
    learner's layer from the case's configuration, loads the grader's weights and runs the plan."""

    def run(plan, config, weights=None, hidden=None, mask=None, config1=None, weights1=None, hidden1=None,
            encoder=None, segments=None, **_ignored):
        import torch

        if plan == "init":
            return _initial_stds(torch, _build(cls, config))
        with torch.no_grad():
            module = _load(torch, _build(cls, config), weights)
            dtype = next(module.parameters()).dtype
            x = _tensor(torch, hidden, dtype)
            attention_mask = None if mask is None else torch.tensor(mask, dtype=torch.long)

            def second_layer():
                """Layer 1 and its input, built only when a plan reaches it: after layer 0 has run."""
                return _load(torch, _build(cls, config1), weights1), _tensor(torch, hidden1, dtype)

            if encoder is not None:  # cross-attention: keys and values from the encoder's states
                states = _tensor(torch, encoder, dtype)
                if plan in ("full", "cross_steps"):
                    return _cross_attention(torch, module, x, states, attention_mask, plan)
            if segments is not None:  # packed rows: every plan but "full" is two layers
                ids = torch.tensor(segments, dtype=torch.long)
                return _packed_rows(torch, module, x, attention_mask, ids, plan, second_layer)
            if plan in ("full", "bias"):
                return _one_pass(torch, module, x, attention_mask, plan)
            if plan in ("steps", "steps_bias"):
                return _cached_steps(torch, module, x, attention_mask, plan)
            if plan == "two_layers":
                return _two_layers(torch, module, x, attention_mask, second_layer)
        raise GradingSetupError(f"unknown plan {plan!r} (a bug in the grader)")

    return run


def _initial_stds(torch, module):
    """Plan "init": the std of each projection's weights right after construction, before any loading."""
    if not isinstance(module, torch.nn.Module):
        raise GradingSetupError("your class should be an nn.Module subclass")
    state = module.state_dict()
    missing = [f"{n}.weight" for n in PROJECTIONS if f"{n}.weight" not in state]
    if missing:
        raise GradingSetupError(f"the module has no parameter {missing[0]}: name the projections "
                                "self.q, self.k, self.v, self.o, as transformers does")
    return torch.stack([state[f"{n}.weight"].detach().double().std() for n in PROJECTIONS])


def _need_cache(past):
    """Decoding step by step only works if each step hands back the cache for the next one."""
    if past is None:
        raise GradingSetupError("with use_cache=True, forward should return the cache "
                                "(keys, values) as its third value")


def _cross_attention(torch, module, x, states, attention_mask, plan):
    """Plans "full" (one pass) and "cross_steps" (a 2-token prompt, then token by token, the cache handed back
    each step; W_k and W_v may run only in the first call)."""
    if plan == "full":
        output, _, _ = _parts(_cross(module, x, states, attention_mask), torch)
        return _need(output, "output", torch)
    past, outputs, calls = None, [], []
    hooks = [getattr(module, name).register_forward_hook(lambda *_: calls.append(1)) for name in ("k", "v")]
    try:
        first = min(2, x.shape[1])  # a 2-token prompt, then token by token (t5_layer_cases.decoding_steps)
        for start, end in [(0, first)] + [(t, t + 1) for t in range(first, x.shape[1])]:
            del calls[:]
            output, _, past = _parts(_cross(module, x[:, start:end], states, attention_mask,
                                            past_key_value=past, use_cache=True), torch)
            outputs.append(_need(output, "output", torch))
            _need_cache(past)
            if start and calls:  # the outputs are the same either way: only the projections' calls tell
                raise GradingSetupError(
                    "with the cache, cross-attention ran W_k and W_v on the encoder's states again at a later "
                    "step; those states do not change while the decoder writes, so later calls should use the "
                    "cached keys and values as they are")
    finally:
        for hook in hooks:
            hook.remove()
    return torch.cat(outputs, dim=1)


def _packed_rows(torch, module, x, attention_mask, segment_ids, plan, second_layer):
    """Packed rows: plan "full" is one pass; any other runs layer 1 on layer 0's bias."""
    output, bias, _ = _parts(_packed(module, x, attention_mask, segment_ids), torch)
    if plan == "full":
        return _need(output, "output", torch)
    second, hidden1 = second_layer()
    output, _, _ = _parts(_packed(second, hidden1, attention_mask, segment_ids,
                                  position_bias=_need(bias, "position_bias", torch)), torch)
    return _need(output, "output", torch)


def _one_pass(torch, module, x, attention_mask, plan):
    """Plans "full" (the output of one self-attention pass) and "bias" (the position_bias it returns)."""
    output, bias, _ = _parts(module(x, attention_mask=attention_mask), torch)
    return _need(output, "output", torch) if plan == "full" else _need(bias, "position_bias", torch)


def _cached_steps(torch, module, x, attention_mask, plan):
    """Plans "steps" (the outputs of decoding token by token with the cache, concatenated) and
    "steps_bias" (the position_bias of the last step); each step's mask covers the tokens so far."""
    past, outputs, bias = None, [], None
    for t in range(x.shape[1]):
        step_mask = None if attention_mask is None else attention_mask[:, : t + 1]
        output, bias, past = _parts(module(x[:, t:t + 1], attention_mask=step_mask,
                                           past_key_value=past, use_cache=True), torch)
        outputs.append(_need(output, "output", torch))
        _need_cache(past)
    return torch.cat(outputs, dim=1) if plan == "steps" else _need(bias, "position_bias", torch)


def _two_layers(torch, module, x, attention_mask, second_layer):
    """Plan "two_layers": layer 0 computes the bias, and layer 1, which owns no table, is handed it."""
    _, bias, _ = _parts(module(x, attention_mask=attention_mask), torch)
    _need(bias, "position_bias", torch)
    second, hidden1 = second_layer()
    output, _, _ = _parts(second(hidden1, attention_mask=attention_mask, position_bias=bias), torch)
    return _need(output, "output", torch)


def _takes(module, name):
    """Whether the module's forward accepts the keyword `name` (True when its signature cannot be read)."""
    import inspect

    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return True
    return not parameters or name in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())


def _cross(module, x, states, attention_mask, **kwargs):
    """One cross-attention call; a forward without key_value_states is told so, not a TypeError wall."""
    if not _takes(module, "key_value_states"):
        raise GradingSetupError("forward has no key_value_states parameter, so it cannot do cross-attention "
                                "(keys and values from the encoder's states)")
    return module(x, key_value_states=states, attention_mask=attention_mask, **kwargs)


def _packed(module, x, attention_mask, segment_ids, **kwargs):
    """One self-attention pass over packed rows; a forward without segment_ids is told so."""
    if not _takes(module, "segment_ids"):
        raise GradingSetupError("forward has no segment_ids parameter, so it cannot keep the examples packed into "
                                "one row apart")
    return module(x, attention_mask=attention_mask, segment_ids=segment_ids, **kwargs)
