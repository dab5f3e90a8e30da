"""Every metadata key, tensor name, type id and release value of the MotionBricks
GGUF model bundle v1. Nothing else in the package spells these strings."""

# ---- GGUF container -------------------------------------------------------

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
GGUF_ALIGNMENT = 32

# metadata value types (gguf v3)
GGUF_TYPE_UINT8 = 0
GGUF_TYPE_INT8 = 1
GGUF_TYPE_UINT16 = 2
GGUF_TYPE_INT16 = 3
GGUF_TYPE_UINT32 = 4
GGUF_TYPE_INT32 = 5
GGUF_TYPE_FLOAT32 = 6
GGUF_TYPE_BOOL = 7
GGUF_TYPE_STRING = 8
GGUF_TYPE_ARRAY = 9
GGUF_TYPE_UINT64 = 10
GGUF_TYPE_INT64 = 11
GGUF_TYPE_FLOAT64 = 12

# tensor types as the release writes them (I32 is 26, the ggml v0.20.2 enum value)
GGML_TYPE_F32 = 0
GGML_TYPE_Q8_0 = 8
GGML_TYPE_I32 = 26
GGML_TYPE_BF16 = 30
GGML_TYPE_NAMES = {GGML_TYPE_F32: "F32", GGML_TYPE_Q8_0: "Q8_0", GGML_TYPE_I32: "I32", GGML_TYPE_BF16: "BF16"}
Q8_0_BLOCK = 32          # values per block_q8_0
Q8_0_BLOCK_BYTES = 34    # F16 scale + 32 int8

# general.file_type (llama.cpp's LLAMA_FTYPE values): all F32, mostly Q8_0, mostly BF16
FILE_TYPE_ALL_F32 = 0
FILE_TYPE_MOSTLY_Q8_0 = 7
FILE_TYPE_MOSTLY_BF16 = 32
FILE_TYPES = {"f32": FILE_TYPE_ALL_F32, "q8_0": FILE_TYPE_MOSTLY_Q8_0, "bf16": FILE_TYPE_MOSTLY_BF16}

# GGML_MAX_NAME: stored names are at most 63 bytes plus the NUL
MAX_TENSOR_NAME = 64

# ---- metadata keys, in the order every component writes them ---------------

KEY_ARCHITECTURE = "general.architecture"
KEY_NAME = "general.name"
KEY_ALIGNMENT = "general.alignment"
KEY_FILE_TYPE = "general.file_type"
KEY_FORMAT_VERSION = "motionbricks.format_version"
KEY_COMPONENT = "motionbricks.component"
KEY_SKELETON = "motionbricks.skeleton"
KEY_UPSTREAM_REVISION = "motionbricks.upstream_revision"
KEY_SOURCE_SHA256 = "motionbricks.source_sha256"
KEY_PARAMETER_COUNT = "motionbricks.parameter_count"
KEY_JOINT_NAMES = "motionbricks.joint_names"     # support only
# optional hyper-parameters that tensor shapes cannot tell; written (after the
# keys above) only when they differ from the release values
KEY_N_HEAD = "motionbricks.n_head"                    # pose, root
KEY_DILATION_GROWTH = "motionbricks.dilation_growth"  # root, vq-decoder

ARCHITECTURE = "motionbricks"
MODEL_NAME = "NVIDIA MotionBricks G1"
FORMAT_VERSION = 1
SKELETON = "g1skel34"

# ---- components -----------------------------------------------------------

COMPONENT_POSE = "pose"
COMPONENT_ROOT = "root"
COMPONENT_VQ_DECODER = "vq-decoder"
COMPONENT_SUPPORT = "support"
COMPONENTS = (COMPONENT_POSE, COMPONENT_ROOT, COMPONENT_VQ_DECODER, COMPONENT_SUPPORT)
LEARNED_COMPONENTS = (COMPONENT_POSE, COMPONENT_ROOT, COMPONENT_VQ_DECODER)
COMPONENT_FILES = {c: c + ".gguf" for c in COMPONENTS}

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "motionbricks-gguf-bundle-v1"
# manifest.json keys
MANIFEST_KEY_FORMAT = "format"
MANIFEST_KEY_UPSTREAM_REVISION = "upstream_revision"
MANIFEST_KEY_SKELETON = "skeleton"
MANIFEST_KEY_JOINT_COUNT = "joint_count"
MANIFEST_KEY_INFERENCE_PARAMETER_COUNT = "inference_parameter_count"
MANIFEST_KEY_COMPONENTS = "components"
MANIFEST_KEY_SAFE_MANIFEST_SHA256 = "safe_manifest_sha256"
MANIFEST_KEY_PATH = "path"
MANIFEST_KEY_SHA256 = "sha256"
MANIFEST_KEY_TENSOR_COUNT = "tensor_count"
MANIFEST_KEY_PARAMETER_COUNT = "parameter_count"
MANIFEST_KEY_WEIGHT_DTYPE = "weight_dtype"     # reduced bundles only: bf16 or q8_0
MANIFEST_KEY_TENSOR_TYPES = "tensor_types"     # reduced bundles only: tensors per ggml type name

# ---- release values ---------------------------------------------------------

RELEASE_UPSTREAM_REVISION = "a0732b642c0333077e127a2f56ab0014c196bca4"
RELEASE_N_HEAD_POSE = 16
RELEASE_N_HEAD_ROOT = 16
RELEASE_DILATION_GROWTH = 3
# source hashes of the published bundle (LocalAI-io/MotionBricks-G1-GGML @ cc2a476)
RELEASE_SOURCE_SHA256 = {
    COMPONENT_POSE: "01327768be7413111dc927947a95cfb3e9ee7c52acfa35a054e8c2f3b838b888",
    COMPONENT_ROOT: "d1529a8c9da915cb7dd0499272baba61db480660c0aae92b67fbe69828e83c5a",
    COMPONENT_VQ_DECODER: "544782e605ed96d60bf999243ef8f44640ea021a5655ef20af2d2853c3e18b5b",
    COMPONENT_SUPPORT: "229b764411652b2ab0f824481d6daf897f701a97223029759444fc5bc241ea22",
}
# published sizes, tensor counts and element counts of the full model
RELEASE_FILE_BYTES = {
    COMPONENT_POSE: 546369984,
    COMPONENT_ROOT: 136504000,
    COMPONENT_VQ_DECODER: 49753440,
    COMPONENT_SUPPORT: 5472,
}
RELEASE_TENSOR_COUNT = {COMPONENT_POSE: 209, COMPONENT_ROOT: 150, COMPONENT_VQ_DECODER: 51, COMPONENT_SUPPORT: 4}
RELEASE_PARAMETER_COUNT = {
    COMPONENT_POSE: 136588272,
    COMPONENT_ROOT: 34122833,
    COMPONENT_VQ_DECODER: 12437277,
    COMPONENT_SUPPORT: 972,
}
RELEASE_INFERENCE_PARAMETER_COUNT = 183148382
RELEASE_SUPPORT_SHA256 = "5d41cae4bc494e612ef19e25f599351aafbc9ef1cb46d4ac3f1e42bb7ab07200"

# ---- upstream state-dict prefixes and selection -----------------------------

PREFIX_BACKBONE = "backbone_net."     # pose and root MotionModel
PREFIX_VQVAE = "pose_net."            # VQ-VAE Lightning module
PREFIX_VQ_DECODER = "decoder."        # kept part of the VQ-VAE (after pose_net.)
NAME_CODEBOOK = "quantizer.vq._codebook.embed"
# training-only tensors (after prefix stripping) that are dropped
TRAINING_ONLY_EXACT = ("initted",)
TRAINING_ONLY_PREFIXES = ("encoder.", "quantizer.")   # VQ encoder, EMA state, flags (codebook embed kept)

# ---- tensor names (as stored, before compaction) ----------------------------

# pose planner
POSE_TOKEN_EMB = "_pose_token_emb.weight"
POSE_PROJ_TOKEN_EMB = "_proj_pose_token_emb"                 # FCBlock: fc_layers.{i}, forward_projection
POSE_PROJ_LOCAL_POSE = "_proj_local_pose"
POSE_PROJ_LOCAL_ROOT_VALUES = "_proj_local_root_values"
POSE_PROJ_NUM_VALID_POSITIONS = "_proj_num_valid_positions.weight"
POSE_PROJ_INPUT = "_proj_input.0"
POSE_POSITION_EMB = "_position_emb.embed"
POSE_PROJ_OUTPUT_LOGIT = "_proj_pose_output_logit"
POSE_TRANSFORMER = "_transformer_model.layers"

# root planner
ROOT_PROJ_LOCAL_POSE = "_proj_local_pose"
ROOT_PROJ_LOCAL_ROOT_VALUE = "_proj_local_root_value"
ROOT_PROJ_GLOBAL_ROOT_VALUE = "_proj_global_root_value"
ROOT_NO_LOCAL_POSE_EMB = "_no_local_pose_emb"
ROOT_NO_LOCAL_ROOT_EMB = "_no_local_root_emb"
ROOT_NO_GLOBAL_ROOT_EMB = "_no_global_root_emb"
ROOT_CONV_NO_FRAME_EMB = "_conv_no_frame_emb"
ROOT_PROJ_START_INPUT = "_proj_start_input"
ROOT_PROJ_END_INPUT = "_proj_end_input"
ROOT_INPUT_POSITION_EMB = "_input_position_emb.weight"
ROOT_PROJ_INPUT_NUM_TOKENS = "_proj_input_num_tokens.weight"
ROOT_POSITION_EMB = "_position_emb.embed"
ROOT_PROJ_NUM_TOKEN_OUTPUT_LOGIT = "_proj_num_token_output_logit"
ROOT_MIDDLE_TOKEN_EMB = "_middle_token_emb.weight"
ROOT_SHARED_TRANSFORMER = "_shared_transformer_model.layers"
ROOT_TOKEN_TRANSFORMER = "_root_token_transformer_model.layers"
ROOT_CONV_OUTPUT = "_conv_output"

# vq decoder
VQ_DECODER = "decoder"
VQ_CODEBOOK = NAME_CODEBOOK

# pieces of repeated blocks
MLP_FC_LAYERS = "fc_layers"
MLP_FORWARD_PROJECTION = "forward_projection"
LAYER_IN_PROJ_WEIGHT = "self_attn.in_proj_weight"
LAYER_IN_PROJ_BIAS = "self_attn.in_proj_bias"
LAYER_OUT_PROJ_WEIGHT = "self_attn.out_proj.weight"
LAYER_OUT_PROJ_BIAS = "self_attn.out_proj.bias"
LAYER_LINEAR1 = "linear1"
LAYER_LINEAR2 = "linear2"
LAYER_NORM1 = "norm1"
LAYER_NORM2 = "norm2"
CONV_MODEL = "model"
CONV_EXTERNAL_COND = "external_cond_blocks"
CONV_TARGET_COND = "target_cond_blocks"
CONV_RES_CONV1 = "conv1"
CONV_RES_CONV2 = "conv2"
WEIGHT = "weight"
BIAS = "bias"

# support
SUPPORT_JOINT_PARENTS = "joint_parents"
SUPPORT_MOTION_MEAN = "motion_mean"
SUPPORT_MOTION_STD = "motion_std"
SUPPORT_NEUTRAL_JOINTS = "neutral_joints"
# stats keys of a stats .safetensors (--stats)
STATS_KEY_MEAN = "mean"
STATS_KEY_STD = "std"

# ---- compaction of names >= 64 bytes (applied in this order) ---------------

COMPACTION_RULES = (
    ("_root_token_transformer_encoder.layers.", "root.l."),
    ("_shared_transformer_encoder.layers.", "shared.l."),
    ("_transformer_encoder.layers.", "transformer.l."),
    ("self_attn.", "attn."),
    ("in_proj_weight", "qkv.weight"),
    ("in_proj_bias", "qkv.bias"),
    ("external_cond_blocks.", "xcond."),
    ("target_cond_blocks.", "tcond."),
)
COMPACTION_KEEP_BYTES = 48      # prefix kept when substitutions are not enough
COMPACTION_HASH_HEX = 12        # hex digits of SHA-256(original name) appended after '.'

# ---- fixed architecture constants (not hyper-parameters of the release) -----

N_CODE_HEADS = 8            # VQ heads per token
N_CODES = 10                # codes per head
MIN_TOKENS = 6
MAX_TOKENS = 16
FRAMES_PER_TOKEN = 4        # 2 ** down_t
DOWN_T = 2
N_NUM_TOKEN_CLASSES = MAX_TOKENS - MIN_TOKENS + 2      # 6..16 plus out-of-reach
N_NUM_TOKEN_INPUTS = MAX_TOKENS - MIN_TOKENS + 3       # plus [MASK]
LOCAL_POSE_DIM = 304        # ric + rotations + root height
LOCAL_ROOT_DIM = 4
GLOBAL_ROOT_DIM = 5
DECODER_EXTERNAL_COND_DIM = 2
LOCAL_FEATURE_DIM = 413     # vq decoder output (local rep)
N_FEATURES = 418            # dual rep: mean/std length

# ---- G1Skeleton34 -----------------------------------------------------------

# (name, parent, neutral rest position in metres, Y up, relative to the pelvis)
SKELETON_JOINTS = (
    ("pelvis_skel", -1, (0.0, 0.0, 0.0)),
    ("left_hip_pitch_skel", 0, (0.064452, -0.10269999999999996, -3.7115199802428826e-17)),
    ("left_hip_roll_skel", 1, (0.116452, -0.13316499999999992, -5.542610814757153e-17)),
    ("left_hip_yaw_skel", 2, (0.116452, -0.2572849999999999, 0.025000999999999912)),
    ("left_knee_skel", 3, (0.11860089999999998, -0.43462499999999993, -0.05327200000000012)),
    ("left_ankle_pitch_skel", 4, (0.11850645499999997, -0.7346349999999999, -0.05327200000000018)),
    ("left_ankle_roll_skel", 5, (0.11850645499999997, -0.7521929999999999, -0.05327200000000018)),
    ("left_toe_base", 6, (0.11850645499999997, -0.7871929999999999, 0.0867279999999998)),
    ("right_hip_pitch_skel", 0, (-0.064452, -0.10269999999999996, -8.492762049172589e-18)),
    ("right_hip_roll_skel", 8, (-0.116452, -0.13316499999999992, -3.711031482112053e-18)),
    ("right_hip_yaw_skel", 9, (-0.116452, -0.2572849999999999, 0.025000999999999968)),
    ("right_knee_skel", 10, (-0.11860090000000001, -0.43462499999999993, -0.05327200000000007)),
    ("right_ankle_pitch_skel", 11, (-0.11850645500000001, -0.7346349999999999, -0.05327200000000014)),
    ("right_ankle_roll_skel", 12, (-0.11850645500000001, -0.7521929999999999, -0.05327200000000014)),
    ("right_toe_base", 13, (-0.11850645500000001, -0.7871929999999999, 0.08672799999999986)),
    ("waist_yaw_skel", 0, (0.0, 0.0, 0.0)),
    ("waist_roll_skel", 15, (-8.800737916203616e-19, 0.04400000000000006, -0.00396349999999999)),
    ("waist_pitch_skel", 16, (-8.800737916203616e-19, 0.04400000000000006, -0.00396349999999999)),
    ("left_shoulder_pitch_skel", 17, (0.10022, 0.2917800000000001, -7.199999999956796e-06)),
    ("left_shoulder_roll_skel", 18, (0.13821999999999998, 0.2779490000000001, -7.199999999968305e-06)),
    ("left_shoulder_yaw_skel", 19, (0.14446, 0.17474900000000004, -7.199999999992605e-06)),
    ("left_elbow_skel", 20, (0.14446, 0.09423100000000005, 0.01577579999999999)),
    ("left_wrist_roll_skel", 21, (0.14634791000000003, 0.08423100000000006, 0.1157758)),
    ("left_wrist_pitch_skel", 22, (0.14634791000000003, 0.08423100000000006, 0.1537758)),
    ("left_wrist_yaw_skel", 23, (0.14634791000000003, 0.08423100000000006, 0.1997758)),
    ("left_hand_roll_skel", 24, (0.14634791000000003, 0.08423100000000006, 0.2997758)),
    ("right_shoulder_pitch_skel", 17, (-0.10021, 0.2917800000000001, -7.199999999912388e-06)),
    ("right_shoulder_roll_skel", 26, (-0.13820999999999997, 0.2779490000000001, -7.199999999907021e-06)),
    ("right_shoulder_yaw_skel", 27, (-0.14445, 0.17474900000000004, -7.19999999992855e-06)),
    ("right_elbow_skel", 28, (-0.14445, 0.09423100000000005, 0.015775800000000055)),
    ("right_wrist_roll_skel", 29, (-0.14633790999999996, 0.08423100000000006, 0.11577580000000005)),
    ("right_wrist_pitch_skel", 30, (-0.14633790999999996, 0.08423100000000006, 0.15377580000000005)),
    ("right_wrist_yaw_skel", 31, (-0.14633790999999996, 0.08423100000000006, 0.19977580000000006)),
    ("right_hand_roll_skel", 32, (-0.14633790999999996, 0.08423100000000006, 0.2997758000000001)),
)
N_JOINTS = len(SKELETON_JOINTS)
JOINT_NAMES_SEPARATOR = ","

# ---- .mbstyle v1 (style assets: python/motionbricks/style.py) --------------

COMPONENT_STYLE = "style"
STYLE_SUFFIX = ".mbstyle"
KEY_STYLE_NAME = "motionbricks.style_name"        # STRING, = general.name
KEY_STYLE_SPEED = "motionbricks.style_speed"      # FLOAT32, configured speed (m/s), 0..10
KEY_STYLE_FRAMES = "motionbricks.style_frames"    # UINT32, 4..100000
KEY_STYLE_INDEX = "motionbricks.style_index"      # UINT32, 0..14 in the released set (optional)
STYLE_JOINT_POSITIONS = "global_joint_positions"  # F32 [F, 34, 3]
STYLE_JOINT_ROTATIONS = "global_joint_rotations"  # F32 [F, 34, 9] row-major
STYLE_ROOT_POSITIONS = "global_root_positions"    # F32 [F, 3]
STYLE_HEADINGS = "global_headings"                # F32 [F]
STYLE_ALLOWED_TOKENS = "allowed_tokens"           # I32 [11], 6..16 tokens
STYLE_MIN_FRAMES = 4
STYLE_MAX_FRAMES = 100000
STYLE_FPS = 30
# physical bounds of a style (= src/format/style.h k_style_max_*; docs/FORMATS.md): a G1 stands
# 1.3 m and walks at most about 2 m/s
STYLE_MAX_SPEED = 10.0                    # m/s, style_speed
STYLE_MAX_JOINT_OFFSET = 5.0              # m, |each coordinate| of a joint minus the root
STYLE_MAX_ROOT_DISTANCE = 1e4             # m, |each coordinate| of the root path
STYLE_MAX_HEADING = 4 * 3.141592653589793   # rad, |heading|
# source hash of the released styles: upstream G1-clip safetensors
STYLE_RELEASE_SOURCE_SHA256 = "7ea40c20130c8a9799d83c0438750b51a5be9b1e09357c4928887961fc992d33"
# the released styles: (name, configured speed m/s, allowed token counts from 6)
STYLE_RELEASE = (
    ("idle", 0.0, 6), ("slow_walk", 0.3, 6), ("walk", 1.0, 6), ("hand_crawling", 0.5, 6),
    ("walk_boxing", 1.0, 11), ("elbow_crawling", 0.8, 11), ("stealth_walk", 1.0, 6), ("injured_walk", 0.5, 6),
    ("walk_stealth", 0.7, 6), ("walk_happy_dance", 1.0, 6), ("walk_zombie", 0.6, 6), ("walk_gun", 0.6, 6),
    ("walk_scared", 0.6, 6), ("walk_left", 0.2, 4), ("walk_right", 0.2, 4),
)

# ---- MuJoCo G1 (upstream assets/skeletons/g1/g1.xml) ------------------------

QPOS_DIM = 36                 # root xyz (Z up), root quat w x y z, 29 hinge angles
# hinges in document order: (joint, parent body index: 0 = pelvis, k + 1 = hinge k,
# body pos (MuJoCo frame, m), body quat w x y z or None, axis 0/1/2 = MuJoCo x/y/z)
G1_HINGES = (
    ("left_hip_pitch_joint", 0, (0.0, 0.064452, -0.1027), None, 1),
    ("left_hip_roll_joint", 1, (0.0, 0.052, -0.030465), (0.996179, 0.0, -0.0873386, 0.0), 0),
    ("left_hip_yaw_joint", 2, (0.025001, 0.0, -0.12412), None, 2),
    ("left_knee_joint", 3, (-0.078273, 0.0021489, -0.17734), (0.996179, 0.0, 0.0873386, 0.0), 1),
    ("left_ankle_pitch_joint", 4, (0.0, -9.4445e-05, -0.30001), None, 1),
    ("left_ankle_roll_joint", 5, (0.0, 0.0, -0.017558), None, 0),
    ("right_hip_pitch_joint", 0, (0.0, -0.064452, -0.1027), None, 1),
    ("right_hip_roll_joint", 7, (0.0, -0.052, -0.030465), (0.996179, 0.0, -0.0873386, 0.0), 0),
    ("right_hip_yaw_joint", 8, (0.025001, 0.0, -0.12412), None, 2),
    ("right_knee_joint", 9, (-0.078273, -0.0021489, -0.17734), (0.996179, 0.0, 0.0873386, 0.0), 1),
    ("right_ankle_pitch_joint", 10, (0.0, 9.4445e-05, -0.30001), None, 1),
    ("right_ankle_roll_joint", 11, (0.0, 0.0, -0.017558), None, 0),
    ("waist_yaw_joint", 0, (0.0, 0.0, 0.0), None, 2),
    ("waist_roll_joint", 13, (-0.0039635, 0.0, 0.044), None, 0),
    ("waist_pitch_joint", 14, (0.0, 0.0, 0.0), None, 1),
    ("left_shoulder_pitch_joint", 15, (0.0039563, 0.10022, 0.24778), (0.990264, 0.139201, 1.38722e-05, -9.86868e-05), 1),
    ("left_shoulder_roll_joint", 16, (0.0, 0.038, -0.013831), (0.990268, -0.139172, 0.0, 0.0), 0),
    ("left_shoulder_yaw_joint", 17, (0.0, 0.00624, -0.1032), None, 2),
    ("left_elbow_joint", 18, (0.015783, 0.0, -0.080518), None, 1),
    ("left_wrist_roll_joint", 19, (0.1, 0.00188791, -0.01), None, 0),
    ("left_wrist_pitch_joint", 20, (0.038, 0.0, 0.0), None, 1),
    ("left_wrist_yaw_joint", 21, (0.046, 0.0, 0.0), None, 2),
    ("right_shoulder_pitch_joint", 15, (0.0039563, -0.10021, 0.24778), (0.990264, -0.139201, 1.38722e-05, 9.86868e-05), 1),
    ("right_shoulder_roll_joint", 23, (0.0, -0.038, -0.013831), (0.990268, 0.139172, 0.0, 0.0), 0),
    ("right_shoulder_yaw_joint", 24, (0.0, -0.00624, -0.1032), None, 2),
    ("right_elbow_joint", 25, (0.015783, 0.0, -0.080518), None, 1),
    ("right_wrist_roll_joint", 26, (0.1, -0.00188791, -0.01), None, 0),
    ("right_wrist_pitch_joint", 27, (0.038, 0.0, 0.0), None, 1),
    ("right_wrist_yaw_joint", 28, (0.046, 0.0, 0.0), None, 2),
)
