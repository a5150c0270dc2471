"""The current step's batch and backward time, counted while the step runs and read once at its end (steps.py): the
DataLoader's waits and batches when one feeds the step, else the outermost module's input (modelwatch.py)."""
# DataLoader batches without token ids after which the probe stops looking for them.
TOKENS_AFTER = 8


class StepBatch(object):
    def __init__(self):
        # (start, end) of backward passes seen from their start (patches.py), appended at their end from the engine's
        # thread: one list for the probe's life (the engine's callbacks hold it).
        self.backward_spans = []
        self.batches_without_tokens = 0  # across steps: a loader's batches keep their structure
        self.step_mixed = False  # batches of two iterators in this step (sampling.py: such a loop is not paused)
        self.reset()

    def reset(self):
        """A step starts: nothing of it counted yet."""
        self.data_wait_s = 0.0
        self.batches = 0
        self.samples = 0
        self.samples_known = True
        self.tokens = 0
        self.tokens_known = True
        self.seq_len = None
        self.input_samples = 0
        self.input_samples_known = True
        self.input_tokens = 0
        self.input_tokens_known = True
        self.input_seq_len = None
        self.input_forwards = 0
        self.forwards_since_backward = 0
        self.backward_s = 0.0
        self.last_step_mixed, self.step_mixed = self.step_mixed, False

    def second_iterator(self):
        """Another iterator hands this step its batches: mixed if one already did."""
        if self.batches > 0:
            self.step_mixed = True

    def loader_batch(self, wait_s, batch, reader):
        """A DataLoader batch of this step, after `wait_s` of waiting."""
        self.data_wait_s += wait_s
        self.batches += 1
        if not self.samples_known and not self.tokens_known:
            return
        if not reader.readable():
            self.samples_known = self.tokens_known = False
            return
        n = reader.size(batch)
        if n is None:
            self.samples_known = False
        else:
            self.samples += n
        # Token ids are looked for until TOKENS_AFTER batches have shown none.
        tok = reader.tokens(batch) if self.batches_without_tokens < TOKENS_AFTER else None
        if tok is None:
            self.tokens_known = False
            self.batches_without_tokens += 1
        else:
            self.tokens += tok[0]
            self.seq_len = tok[1]
            self.batches_without_tokens = 0

    def unreadable_input(self):
        """A forward of the model whose input may not be read now (tracing, a torch function mode)."""
        self.input_samples_known = self.input_tokens_known = False
        self.input_forwards += 1

    def model_input(self, n, tok):
        """A forward's input: `n` samples (None: unknown), `tok` (tokens, sequence length) or None."""
        if n is None:
            self.input_samples_known = False
        else:
            self.input_samples += n
        if tok is None:
            self.input_tokens_known = False
        else:
            self.input_tokens += tok[0]
            self.input_seq_len = tok[1]
        self.input_forwards += 1

    def micro_batch_ended(self):
        """A backward pass where the model's input is the batch: one without its forward seen (an evaluation call
        before it disarmed the watch) leaves the step's samples unknown."""
        if self.forwards_since_backward == 0 and self.input_forwards > 0:
            self.input_samples_known = self.input_tokens_known = False
        self.forwards_since_backward = 0

    def add_backward_spans(self):
        """The backward passes that ended since, from the engine's thread (appended there: only the first n taken)."""
        spans = self.backward_spans
        n = len(spans)
        self.backward_s += sum(t1 - t0 for t0, t1 in spans[:n])
        del spans[:n]

    def fields(self, foreign_input):
        """(samples, tokens, seq_len, batch source, forwards) of the step: the DataLoader's when one fed it, else the
        model's input, unless that was seen on another thread (`foreign_input`: an evaluator's calls)."""
        samples = tokens = seq_len = source = forwards = None
        if self.batches > 0:
            source = "dataloader"
            samples = self.samples if self.samples_known else None
            if self.tokens_known:
                tokens, seq_len = self.tokens, self.seq_len
        elif self.input_forwards > 0:
            source = "model-input"
            forwards = self.input_forwards  # the micro-batches: samples are summed over them
            if not foreign_input:
                samples = self.input_samples if self.input_samples_known else None
                if self.input_tokens_known:
                    tokens, seq_len = self.input_tokens, self.input_seq_len
        return samples, tokens, seq_len, source, forwards

