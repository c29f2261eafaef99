"""The toolkit-lite flow (rknnlite.api.RKNNLite) on an exported model.
python run_lite.py model.rknn image.npy out.npy"""
import sys

import numpy as np
from rknnlite.api import RKNNLite

if __name__ == '__main__':
    model_path, image_path, out_path = sys.argv[1:4]
    rknn_lite = RKNNLite()
    if rknn_lite.load_rknn(model_path) != 0:
        exit(-1)
    if rknn_lite.init_runtime(core_mask=RKNNLite.NPU_CORE_0) != 0:
        exit(-1)
    outputs = rknn_lite.inference(inputs=[np.load(image_path)])
    np.save(out_path, outputs[0])
    rknn_lite.release()
