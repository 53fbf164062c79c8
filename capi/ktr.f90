! ktr from Fortran: train a surrogate on the simulation's own arrays, configured by a YAML file. The calls are
! TorchFort's, renamed: every function returns an integer status (KTR_RESULT_SUCCESS = 0); ktr_last_error()
! says why one failed.
!
! Arrays are real(real32) or real(real64) (class labels integer(int32) or integer(int64)) of rank 1 to 5, passed
! as they are: the LAST dimension is the sample, so x(n_features, batch) is ktr's (batch, n_features) with no
! copy, and an array section such as x(:, j:j+63) or x(:, 1:n:2) is read through its strides. Device arrays
! (OpenMP `target data use_device_addr`, OpenACC `host_data use_device`) go through the same calls.
!
!   use ktr
!   istat = ktr_create_model("surrogate", "surrogate.yaml", KTR_DEVICE_DEFAULT)
!   istat = ktr_train("surrogate", x, y, loss)          ! x(4, batch), y(1, batch)
!   istat = ktr_inference("surrogate", x, prediction)
module ktr
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  implicit none
  private

  integer, parameter, public :: KTR_RESULT_SUCCESS = 0, KTR_RESULT_INVALID_USAGE = 1, &
                                KTR_RESULT_NOT_SUPPORTED = 2, KTR_RESULT_INTERNAL_ERROR = 3, &
                                KTR_RESULT_DEVICE_ERROR = 4, KTR_RESULT_MPI_ERROR = 5
  integer, parameter, public :: KTR_DEVICE_CPU = -1
  integer, parameter, public :: KTR_DEVICE_DEFAULT = -2  ! the build's device: the host, or the GPU Kokkos uses
  ! KTR_VERSION_MAJOR, _MINOR, _PATCH and KTR_VERSION_STRING: the version this module was built with (from
  ! CMakeLists.txt's project(), the one place it is written; ktr_version() is the library's).
  include "ktr_version.inc"

  public :: ktr_create_model, ktr_create_distributed_model, ktr_train, ktr_inference, ktr_push, ktr_train_steps, ktr_save_model, &
            ktr_load_model, ktr_save_checkpoint, ktr_load_checkpoint, ktr_destroy_model, ktr_finalize, &
            ktr_last_error, ktr_version, ktr_derivatives, ktr_vjp, ktr_jet_forward, ktr_jet_backward, &
            ktr_apply_gradients, ktr_rl_create_system, ktr_rl_create_distributed_system, ktr_rl_push, &
            ktr_rl_ready, ktr_rl_train, ktr_rl_predict, &
            ktr_rl_evaluate, ktr_rl_save_checkpoint, ktr_rl_load_checkpoint, ktr_rl_destroy_system

  interface
    integer(c_int) function c_create_model(name, config, device) bind(C, name="ktr_create_model")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, config
      integer(c_int), value :: device
    end function
    integer(c_int) function c_create_distributed_model(name, config, comm, device) &
        bind(C, name="ktr_create_distributed_model_F")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, config
      integer(c_int), value :: comm, device
    end function
    integer(c_int) function c_train(name, input, label, loss, stream) bind(C, name="ktr_train_F")
      import :: c_char, c_int, c_float, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: input, label
      real(c_float), intent(out) :: loss
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_inference(name, input, output, stream) bind(C, name="ktr_inference_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: input
      type(*), dimension(..), intent(inout) :: output
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_push(name, input, label, stream) bind(C, name="ktr_push_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: input, label
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_train_steps(name, k, loss, stream) bind(C, name="ktr_train_steps")
      import :: c_char, c_int, c_float, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int), value :: k
      real(c_float), intent(out) :: loss
      type(c_ptr), value :: stream
    end function
    integer(c_int) function c_name_file(name, file) bind(C)
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, file
    end function
    integer(c_int) function c_load_checkpoint(name, dir, step_train, step_inference) &
        bind(C, name="ktr_load_checkpoint")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, dir
      integer(c_int64_t), intent(out) :: step_train, step_inference
    end function
    integer(c_int) function c_destroy_model(name) bind(C, name="ktr_destroy_model")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name
    end function
    integer(c_int) function c_finalize() bind(C, name="ktr_finalize")
      import :: c_int
    end function
    type(c_ptr) function c_last_error() bind(C, name="ktr_last_error")
      import :: c_ptr
    end function
    type(c_ptr) function c_version() bind(C, name="ktr_version")
      import :: c_ptr
    end function
    ! ktr_derivatives_F and ktr_jet_forward_F (bound below)
    integer(c_int) function c_jet_call(name, spec, input, output, derivs, stream) bind(C)
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, spec
      type(*), dimension(..), intent(in) :: input
      type(*), dimension(..), intent(inout) :: output
      type(*), dimension(..), intent(inout), optional :: derivs
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_vjp(name, input, cotangent, input_grad, stream) bind(C, name="ktr_vjp_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: input, cotangent
      type(*), dimension(..), intent(inout) :: input_grad
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_jet_backward(name, output_seed, derivs_seed, stream) bind(C, name="ktr_jet_backward_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in), optional :: output_seed, derivs_seed
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_apply_gradients(name, loss_for_log, stream) bind(C, name="ktr_apply_gradients")
      import :: c_char, c_int, c_float, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: name
      real(c_float), value :: loss_for_log
      type(c_ptr), value :: stream
    end function
    ! Reinforcement learning (ktr_c.h's ktr_rl_*): states (S, n), actions (A, n), rewards, flags and values (n).
    integer(c_int) function c_rl_create_system(name, config, n_envs, device) bind(C, name="ktr_rl_create_system")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, config
      integer(c_int64_t), value :: n_envs
      integer(c_int), value :: device
    end function
    integer(c_int) function c_rl_create_distributed(name, config, comm, n_envs, device) &
        bind(C, name="ktr_rl_create_distributed_system_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, config
      integer(c_int), value :: comm
      integer(c_int64_t), value :: n_envs
      integer(c_int), value :: device
    end function
    integer(c_int) function c_rl_push(name, state, action, reward, next_state, done, stream) &
        bind(C, name="ktr_rl_push_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state, action, reward, next_state, done
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_rl_ready(name, ready) bind(C, name="ktr_rl_ready")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int), intent(out) :: ready
    end function
    integer(c_int) function c_rl_train(name, updates, policy_loss, critic_loss, stream) bind(C, name="ktr_rl_train")
      import :: c_char, c_int, c_int64_t, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int64_t), value :: updates
      type(c_ptr), value :: policy_loss, critic_loss, stream
    end function
    integer(c_int) function c_rl_predict(name, state, action, explore, stream) bind(C, name="ktr_rl_predict_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state
      type(*), dimension(..), intent(inout) :: action
      integer(c_int), value :: explore
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_rl_evaluate(name, state, action, q, stream) bind(C, name="ktr_rl_evaluate_F")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(*), dimension(..), intent(in) :: state, action
      type(*), dimension(..), intent(inout) :: q
      integer(c_int64_t), value :: stream
    end function
    integer(c_int) function c_name_only(name) bind(C)
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

  ! The four calls of the form f(name, file) share one interface, bound to each C function by name.
  procedure(c_name_file), bind(C, name="ktr_save_model") :: c_save_model
  procedure(c_name_file), bind(C, name="ktr_load_model") :: c_load_model
  procedure(c_name_file), bind(C, name="ktr_save_checkpoint") :: c_save_checkpoint
  procedure(c_name_file), bind(C, name="ktr_rl_save_checkpoint") :: c_rl_save_checkpoint
  procedure(c_name_file), bind(C, name="ktr_rl_load_checkpoint") :: c_rl_load_checkpoint
  procedure(c_name_only), bind(C, name="ktr_rl_destroy_system") :: c_rl_destroy_system
  procedure(c_jet_call), bind(C, name="ktr_derivatives_F") :: c_derivatives
  procedure(c_jet_call), bind(C, name="ktr_jet_forward_F") :: c_jet_forward

contains

  function c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function

  function f_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  integer(c_int64_t) function stream_of(stream)
    integer(int64), intent(in), optional :: stream
    stream_of = 0
    if (present(stream)) stream_of = stream
  end function

  integer function ktr_create_model(name, config_file, device) result(istat)
    character(len=*), intent(in) :: name, config_file
    integer, intent(in) :: device
    istat = c_create_model(c_string(name), c_string(config_file), int(device, c_int))
  end function

  !> Data-parallel training over the ranks of `comm` (an integer communicator, as mpi_f08's comm%mpi_val or the
  !> mpi module's); an MPI build of ktr, KTR_RESULT_NOT_SUPPORTED otherwise.
  integer function ktr_create_distributed_model(name, config_file, comm, device) result(istat)
    character(len=*), intent(in) :: name, config_file
    integer, intent(in) :: comm, device
    istat = c_create_distributed_model(c_string(name), c_string(config_file), int(comm, c_int), int(device, c_int))
  end function

  !> One optimiser step on the batch (input, label); loss_val receives its loss.
  integer function ktr_train(name, input, label, loss_val, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: input, label
    real(c_float), intent(out) :: loss_val
    integer(int64), intent(in), optional :: stream
    istat = c_train(c_string(name), input, label, loss_val, stream_of(stream))
  end function

  !> Predictions for every sample of input into output(n_outputs, batch).
  integer function ktr_inference(name, input, output, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: input
    type(*), dimension(..), intent(inout) :: output
    integer(int64), intent(in), optional :: stream
    istat = c_inference(c_string(name), input, output, stream_of(stream))
  end function

  !> Appends the batch to the model's replay buffer on the device (general.buffer_size samples).
  integer function ktr_push(name, input, label, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: input, label
    integer(int64), intent(in), optional :: stream
    istat = c_push(c_string(name), input, label, stream_of(stream))
  end function

  !> k optimiser steps on batches drawn on the device from the replay buffer; one read-back (loss_val).
  integer function ktr_train_steps(name, k, loss_val, stream) result(istat)
    character(len=*), intent(in) :: name
    integer, intent(in) :: k
    real(c_float), intent(out) :: loss_val
    integer(int64), intent(in), optional :: stream
    istat = c_train_steps(c_string(name), int(k, c_int), loss_val, transfer(stream_of(stream), c_null_ptr))
  end function

  integer function ktr_save_model(name, file) result(istat)
    character(len=*), intent(in) :: name, file
    istat = c_save_model(c_string(name), c_string(file))
  end function

  integer function ktr_load_model(name, file) result(istat)
    character(len=*), intent(in) :: name, file
    istat = c_load_model(c_string(name), c_string(file))
  end function

  integer function ktr_save_checkpoint(name, directory) result(istat)
    character(len=*), intent(in) :: name, directory
    istat = c_save_checkpoint(c_string(name), c_string(directory))
  end function

  integer function ktr_load_checkpoint(name, directory, step_train, step_inference) result(istat)
    character(len=*), intent(in) :: name, directory
    integer(int64), intent(out) :: step_train, step_inference
    integer(c_int64_t) :: st, si
    istat = c_load_checkpoint(c_string(name), c_string(directory), st, si)
    step_train = st
    step_inference = si
  end function

  !> u and the spec's derivatives at the points input(d, N): output(m, N), derivs(T, m, N) (absent when the spec is
  !> empty). Spec indices are 0-based: it is a string ("d0 d1,1 lap"); see docs/derivatives.md.
  integer function ktr_derivatives(name, spec, input, output, derivs, stream) result(istat)
    character(len=*), intent(in) :: name, spec
    type(*), dimension(..), intent(in) :: input
    type(*), dimension(..), intent(inout) :: output
    type(*), dimension(..), intent(inout), optional :: derivs
    integer(int64), intent(in), optional :: stream
    istat = c_derivatives(c_string(name), c_string(spec), input, output, derivs, stream_of(stream))
  end function

  !> The split step's forward: as ktr_derivatives, keeping what ktr_jet_backward needs.
  integer function ktr_jet_forward(name, spec, input, output, derivs, stream) result(istat)
    character(len=*), intent(in) :: name, spec
    type(*), dimension(..), intent(in) :: input
    type(*), dimension(..), intent(inout) :: output
    type(*), dimension(..), intent(inout), optional :: derivs
    integer(int64), intent(in), optional :: stream
    istat = c_jet_forward(c_string(name), c_string(spec), input, output, derivs, stream_of(stream))
  end function

  !> The input gradient of sum(cotangent * u): cotangent(m, N), input_grad(d, N).
  integer function ktr_vjp(name, input, cotangent, input_grad, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: input, cotangent
    type(*), dimension(..), intent(inout) :: input_grad
    integer(int64), intent(in), optional :: stream
    istat = c_vjp(c_string(name), input, cotangent, input_grad, stream_of(stream))
  end function

  !> Adds the parameter gradient of sum(output_seed * u) + sum(derivs_seed * derivs) (an absent seed is zero).
  integer function ktr_jet_backward(name, output_seed, derivs_seed, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in), optional :: output_seed, derivs_seed
    integer(int64), intent(in), optional :: stream
    istat = c_jet_backward(c_string(name), output_seed, derivs_seed, stream_of(stream))
  end function

  !> One optimiser update from the gradients the backwards added since the last.
  integer function ktr_apply_gradients(name, loss_for_log, stream) result(istat)
    character(len=*), intent(in) :: name
    real(c_float), intent(in) :: loss_for_log
    integer(int64), intent(in), optional :: stream
    istat = c_apply_gradients(c_string(name), loss_for_log, transfer(stream_of(stream), c_null_ptr))
  end function

  integer function ktr_destroy_model(name) result(istat)
    character(len=*), intent(in) :: name
    istat = c_destroy_model(c_string(name))
  end function

  !> A reinforcement-learning system from TorchFort's RL YAML file; n_envs > 0 replaces the file's (0 keeps it).
  integer function ktr_rl_create_system(name, config_file, n_envs, device) result(istat)
    character(len=*), intent(in) :: name, config_file
    integer, intent(in) :: n_envs, device
    istat = c_rl_create_system(c_string(name), c_string(config_file), int(n_envs, c_int64_t), int(device, c_int))
  end function

  !> The same over the ranks of an MPI communicator (mpi's integer handle; mpi_f08: comm%MPI_VAL).
  integer function ktr_rl_create_distributed_system(name, config_file, comm, n_envs, device) result(istat)
    character(len=*), intent(in) :: name, config_file
    integer, intent(in) :: comm, n_envs, device
    istat = c_rl_create_distributed(c_string(name), c_string(config_file), int(comm, c_int), &
                                    int(n_envs, c_int64_t), int(device, c_int))
  end function

  !> One time step of the system's n_envs environments: state and next_state (S, n_envs), action (A, n_envs),
  !> reward and done (n_envs), real32 or real64, host or device arrays.
  integer function ktr_rl_push(name, state, action, reward, next_state, done, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: state, action, reward, next_state, done
    integer(int64), intent(in), optional :: stream
    istat = c_rl_push(c_string(name), state, action, reward, next_state, done, stream_of(stream))
  end function

  integer function ktr_rl_ready(name, ready) result(istat)
    character(len=*), intent(in) :: name
    logical, intent(out) :: ready
    integer(c_int) :: r
    istat = c_rl_ready(c_string(name), r)
    ready = r /= 0
  end function

  !> `updates` updates in one call; the losses (optional: absent, nothing is read back) of the last one.
  integer function ktr_rl_train(name, updates, policy_loss, critic_loss, stream) result(istat)
    character(len=*), intent(in) :: name
    integer, intent(in) :: updates
    real(c_float), intent(out), optional, target :: policy_loss, critic_loss
    integer(int64), intent(in), optional :: stream
    type(c_ptr) :: p, q
    p = c_null_ptr
    q = c_null_ptr
    if (present(policy_loss)) p = c_loc(policy_loss)
    if (present(critic_loss)) q = c_loc(critic_loss)
    istat = c_rl_train(c_string(name), int(updates, c_int64_t), p, q, transfer(stream_of(stream), c_null_ptr))
  end function

  !> action (A, n) for state (S, n); explore adds the actor's noise.
  integer function ktr_rl_predict(name, state, action, explore, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: state
    type(*), dimension(..), intent(inout) :: action
    logical, intent(in), optional :: explore
    integer(int64), intent(in), optional :: stream
    integer(c_int) :: e
    e = 0
    if (present(explore)) then
      if (explore) e = 1
    end if
    istat = c_rl_predict(c_string(name), state, action, e, stream_of(stream))
  end function

  !> q (n): the first critic's value of state (S, n) and action (A, n).
  integer function ktr_rl_evaluate(name, state, action, q, stream) result(istat)
    character(len=*), intent(in) :: name
    type(*), dimension(..), intent(in) :: state, action
    type(*), dimension(..), intent(inout) :: q
    integer(int64), intent(in), optional :: stream
    istat = c_rl_evaluate(c_string(name), state, action, q, stream_of(stream))
  end function

  integer function ktr_rl_save_checkpoint(name, directory) result(istat)
    character(len=*), intent(in) :: name, directory
    istat = c_rl_save_checkpoint(c_string(name), c_string(directory))
  end function

  integer function ktr_rl_load_checkpoint(name, directory) result(istat)
    character(len=*), intent(in) :: name, directory
    istat = c_rl_load_checkpoint(c_string(name), c_string(directory))
  end function

  integer function ktr_rl_destroy_system(name) result(istat)
    character(len=*), intent(in) :: name
    istat = c_rl_destroy_system(c_string(name))
  end function

  integer function ktr_finalize() result(istat)
    istat = c_finalize()
  end function

  !> The calling thread's last failure message.
  function ktr_last_error() result(message)
    character(len=:), allocatable :: message
    message = f_string(c_last_error())
  end function

  function ktr_version() result(version)
    character(len=:), allocatable :: version
    version = f_string(c_version())
  end function

end module ktr
