"""Remote code of a tiny DeSTA-like model (copied into its folder as modeling_tiny_desta.py and
loaded with trust_remote_code), written for these tests after DeSTA2's published structure:

- speech perception: a Whisper that transcribes the clip, returning its encoder's hidden states;
- a Q-Former connector: learnt prompts per chosen encoder layer read those states through a
  BERT encoder with cross-attention, are mixed by softmaxed layer weights and projected to the
  LM's width (weights in qformer_connector.pth, as DeSTA2 ships them);
- a Llama LM: the chat template's text with the audio message's path replaced by the
  transcript, and the connector's outputs spliced in as embeddings where the audio was.
chat(messages, max_new_tokens, do_sample, ...) returns the new tokens only; model.tokenizer
decodes them. Sub-models are named by path in the config (DeSTA2 names hub ids). Audio is read
with soundfile (DeSTA2 uses librosa, which the app's environment does not have).
"""

from __future__ import annotations

import os

import soundfile as sf
import torch
from torch import nn
from transformers import (
    AutoModelForCausalLM,
    AutoProcessor,
    AutoTokenizer,
    BertConfig,
    PretrainedConfig,
    PreTrainedModel,
    WhisperForConditionalGeneration,
)
from transformers.models.bert.modeling_bert import BertEncoder


class TinyDestaConfig(PretrainedConfig):
    model_type = "tiny_desta"

    def __init__(
        self,
        whisper_model_id="",
        llama_model_id="",
        prompt_size=4,
        target_layer_ids=(0, 1),
        whisper_d_model=32,
        whisper_heads=2,
        llama_hidden_size=64,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.whisper_model_id, self.llama_model_id = whisper_model_id, llama_model_id
        self.prompt_size, self.target_layer_ids = prompt_size, list(target_layer_ids)
        self.whisper_d_model, self.whisper_heads, self.llama_hidden_size = (
            whisper_d_model,
            whisper_heads,
            llama_hidden_size,
        )


class QformerConnector(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.target_layer_ids = list(cfg.target_layer_ids)
        d = cfg.whisper_d_model
        self.layer_prompts = nn.ParameterList(
            [nn.Parameter(torch.randn(1, cfg.prompt_size, d)) for _ in self.target_layer_ids]
        )
        self.layer_weights = nn.Parameter(torch.zeros(cfg.prompt_size, len(self.target_layer_ids)))
        qcfg = BertConfig(
            hidden_size=d,
            num_hidden_layers=1,
            num_attention_heads=cfg.whisper_heads,
            intermediate_size=2 * d,
            add_cross_attention=True,
            is_decoder=True,
        )
        self.qformer = BertEncoder(qcfg)
        self.proj = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, cfg.llama_hidden_size))

    def forward(self, encoder_hidden_states):
        outs = []
        for idx, states in enumerate(encoder_hidden_states):
            if idx in self.target_layer_ids:
                prompt = self.layer_prompts[self.target_layer_ids.index(idx)].expand(states.size(0), -1, -1)
                outs.append(self.qformer(hidden_states=prompt, encoder_hidden_states=states).last_hidden_state)
        stacked = torch.stack(outs, dim=0).permute(1, 2, 0, 3)  # (b, prompt, layers, d)
        weights = torch.softmax(self.layer_weights, dim=-1).unsqueeze(-1)
        return self.proj((stacked * weights).sum(dim=2))


class TinyDestaModel(PreTrainedModel):
    config_class = TinyDestaConfig

    def __init__(self, config):
        super().__init__(config)
        self.whisper = WhisperForConditionalGeneration.from_pretrained(config.whisper_model_id)
        self.processor = AutoProcessor.from_pretrained(config.whisper_model_id)
        self.connector = QformerConnector(config)
        self.llama = AutoModelForCausalLM.from_pretrained(config.llama_model_id)
        self.tokenizer = AutoTokenizer.from_pretrained(config.llama_model_id)

    # -- DeSTA2's inference path
    def load_audio(self, messages):
        paths = [m["content"] for m in messages if m["role"] == "audio"]
        if len(paths) != 1:
            raise ValueError("exactly one audio message is supported")
        audio, rate = sf.read(paths[0], dtype="float32")
        if rate != 16000:
            raise ValueError(f"expected 16 kHz audio, not {rate}")
        return paths[0], self.processor(audio, sampling_rate=16000, return_tensors="pt").input_features

    def perceive(self, input_features):
        out = self.whisper.generate(
            input_features=input_features.to(self.whisper.device),
            return_dict_in_generate=True,
            output_hidden_states=True,
            language="en",
            task="transcribe",
        )
        transcript = self.processor.batch_decode(out.sequences, skip_special_tokens=True)[0].strip()
        return transcript, self.connector(out.encoder_hidden_states)

    def inputs(self, messages, audio_path, transcript, audio_features):
        context = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        left, right = context.split(audio_path)
        position = len(self.tokenizer(left, add_special_tokens=False).input_ids)
        ids = self.tokenizer(left + transcript + right, add_special_tokens=False, return_tensors="pt").input_ids
        embeds = self.llama.get_input_embeddings()(ids.to(self.llama.device))
        embeds = torch.cat([embeds[0, :position], audio_features[0].to(embeds.dtype), embeds[0, position:]], dim=0)
        return embeds.unsqueeze(0), torch.ones(1, embeds.shape[0], dtype=torch.long, device=embeds.device)

    def chat(self, messages, max_new_tokens=128, do_sample=True, temperature=0.6, top_p=0.9):
        audio_path, feats = self.load_audio(messages)
        transcript, audio_features = self.perceive(feats)
        embeds, mask = self.inputs(messages, audio_path, transcript, audio_features)
        sampling = {"temperature": temperature, "top_p": top_p} if do_sample else {}
        return self.llama.generate(
            inputs_embeds=embeds,
            attention_mask=mask,
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            pad_token_id=self.tokenizer.pad_token_id,
            **sampling,
        )

    # -- training (the test builder only)
    def loss(self, messages, answer: str):
        audio_path, feats = self.load_audio(messages)
        with torch.no_grad():
            transcript, _ = self.perceive(feats)
            out = self.whisper.model.encoder(feats, output_hidden_states=True)
        audio_features = self.connector(out.hidden_states)
        embeds, _ = self.inputs(messages, audio_path, transcript, audio_features)
        eot = self.tokenizer.convert_tokens_to_ids("<|eot_id|>")
        ans = torch.tensor([self.tokenizer(answer, add_special_tokens=False).input_ids + [eot]])
        full = torch.cat([embeds, self.llama.get_input_embeddings()(ans)], dim=1)
        labels = torch.cat([torch.full((1, embeds.shape[1]), -100), ans], dim=1)
        return self.llama(inputs_embeds=full, labels=labels).loss

    @torch.no_grad()
    def margin(self, messages, answer: str) -> float:
        """The smallest gap, over the answer's tokens read as the model would greedily write them,
        between the right token's logit and the best wrong one's: a twin trained to a wide gap
        answers the same whatever the thread count or kernel that sums its floats."""
        audio_path, feats = self.load_audio(messages)
        transcript, audio_features = self.perceive(feats)
        embeds, _ = self.inputs(messages, audio_path, transcript, audio_features)
        eot = self.tokenizer.convert_tokens_to_ids("<|eot_id|>")
        ans = torch.tensor([self.tokenizer(answer, add_special_tokens=False).input_ids + [eot]])
        full = torch.cat([embeds, self.llama.get_input_embeddings()(ans)], dim=1)
        logits = self.llama(inputs_embeds=full).logits[0, embeds.shape[1] - 1 : -1]
        right = logits.gather(1, ans[0].unsqueeze(1)).squeeze(1)
        wrong = logits.scatter(1, ans[0].unsqueeze(1), float("-inf")).max(dim=1).values
        return float((right - wrong).min())

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        config = TinyDestaConfig.from_pretrained(pretrained_model_name_or_path)
        model = cls(config)
        state = torch.load(os.path.join(pretrained_model_name_or_path, "qformer_connector.pth"), weights_only=True)
        model.connector.load_state_dict(state)
        return model.eval()


__all__ = ["TinyDestaConfig", "TinyDestaModel"]
